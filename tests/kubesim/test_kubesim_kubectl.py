"""kubectl (a real client written by others) against podtax kubesim, and the command line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config
from podtax_kubesim.testing import Sim

KUBECTL = shutil.which("kubectl")
REPO = Path(__file__).resolve().parents[2]
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")


def kubectl(sim: Sim, *args: str) -> str:
    proc = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(sim.kubeconfig), *args],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@needs_kubectl
def test_kubectl_get_describe_logs(kubesim: Sim) -> None:
    batch = client.BatchV1Api(kubesim.api_client())
    batch.create_namespaced_job("default", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bench"},
        "spec": {"template": {"metadata": {"annotations": {"podtax.io/sim-duration-seconds": "0.1",
                                                           "podtax.io/sim-log": "events per second: 1234.5"}},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "podtax/bench:1"}]}}}})
    kubesim.wait_for(lambda: any(p["status"]["phase"] == "Succeeded" for p in kubesim.objects("pods", "default")))
    pod = kubesim.objects("pods", "default")[0]["metadata"]["name"]

    nodes = kubectl(kubesim, "get", "nodes")
    assert "x86-0" in nodes and "rpi-0" in nodes and "Ready" in nodes and "kubesim" in nodes
    assert "kubernetes.io/arch=arm64" in kubectl(kubesim, "get", "nodes", "--show-labels")
    pods = kubectl(kubesim, "get", "pods", "-A")
    assert pod in pods and "Completed" in pods
    jobs = kubectl(kubesim, "get", "jobs")
    assert "bench" in jobs and "1/1" in jobs
    assert "events per second: 1234.5" in kubectl(kubesim, "logs", pod)
    described = kubectl(kubesim, "describe", "pod", pod)
    assert "Succeeded" in described and "Scheduled" in described and "x86-0" in described
    assert "podtax.io/simulated" in kubectl(kubesim, "get", "node", "rpi-0", "-o", "yaml")
    assert "kubesim" in kubectl(kubesim, "version")


def test_command_line_serves_a_cluster_file(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "kubesim", "--cluster",
                             str(REPO / "examples" / "clusters" / "mixed.yaml"), "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "SIMULATED" in line, line
        api = config.new_client_from_config(str(kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        arch = sorted(n.metadata.labels["kubernetes.io/arch"] for n in nodes)
        assert arch == ["amd64", "amd64", "amd64", "arm64", "arm64"]
        assert any(n.spec.taints for n in nodes)
    finally:
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0


@needs_kubectl
def test_kubectl_get_follows_the_pages(kubesim: Sim) -> None:
    """kubectl get lists in chunks (`--chunk-size`, 500 by default) of server-side Tables: each page's continue token
    followed, every row once. Before, kubesim ignored the limit and sent every row in the first page."""
    core = client.CoreV1Api(kubesim.api_client())
    for i in (4, 0, 6, 2, 5, 1, 3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    proc = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(kubesim.kubeconfig), "get", "configmaps",
                           "--chunk-size=2", "-v=6"], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[0] for line in proc.stdout.splitlines()[1:]]
    assert [r for r in rows if r.startswith("cm-")] == [f"cm-{i}" for i in range(7)], proc.stdout
    lists = [line for line in proc.stderr.splitlines() if "/configmaps?" in line and "GET" in line]
    assert len(lists) == 4 and sum("continue=" in line for line in lists) == 3, lists
