"""Nothing left behind: a Kubernetes API that starts refusing after 50 volumes, a run that times out,
and SIGTERM mid-run each end with no claim, PV or pod of the run; `podtax volumes cleanup` finds and
removes leftovers (of one campaign only, when asked) and says what it removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from podtax.cli.main import main as cli
from podtax_kubesim.util import ApiError
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import NODE, cluster, ours, spec


def refuse_claims_after(sim: Any, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """FAULT INJECTION: the emulator's create answers 403 for claims after the first n (like an admission
    webhook or a quota that starts refusing)."""
    api = sim.emulator.api
    real, seen = api.create, [0]

    def create(res: Any, ns: str, body: Any) -> Any:
        if res.kind == "PersistentVolumeClaim":
            seen[0] += 1
            if seen[0] > n:
                raise ApiError(403, "Forbidden", "exceeded quota: podtax-test")
        return real(res, ns, body)

    monkeypatch.setattr(api, "create", create)


def test_api_refusing_after_50_leaves_nothing(kubesim_factory: Any, run_cp: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sim = kubesim_factory(cluster(provision=0.05, delete=0.02), kubelet="none")
    refuse_claims_after(sim, monkeypatch, 50)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=100, concurrency=5), kube=sim)
    assert info.value.reason == "api-errors" and "403" in info.value.detail
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")


def test_timeout_leaves_nothing(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(provision=30.0, delete=0.01), kubelet="none")  # never bound within the run
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=20, concurrency=10, timeout=1.5), kube=sim)
    assert info.value.reason == "timeout"
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")


def test_sigterm_mid_run_leaves_nothing(kubesim_factory: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.3, delete=0.05), kubelet="none")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "podtax_runner.controlplane", "--test", "volume-churn", "--node", NODE,
         "--kubeconfig", str(sim.kubeconfig), "--campaign", "sigterm", "--param", "count=400",
         "--param", "concurrency=2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        sim.wait_for(lambda: len(ours(sim, "persistentvolumes")) >= 5, timeout=30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "stopped" in err, err
    assert out == ""
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")


def test_volumes_cleanup_command(kubesim_factory: Any, nomadsim_factory: Any,
                                 capfd: pytest.CaptureFixture[str]) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    nomad = nomadsim_factory({"namespaces": ["default", "batch"]})
    for campaign, name in (("old", "podtax-vc-0123456789-0001"), ("old", "podtax-vc-0123456789-0002"),
                           ("keep", "podtax-vc-abcdef0123-0001")):
        sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "labels": {"podtax.io/kind": "control-plane",
                                                          "podtax.io/campaign": campaign}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",  # not podtax's: never touched
                "metadata": {"name": "someone-elses"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    sim.wait_for(lambda: len(sim.objects("persistentvolumes")) == 4)
    for vol, ns in (("podtax-old-0123456789-0001", "default"), ("podtax-keep-abcdef0123-0001", "default"),
                    ("not-podtax", "default"), ("podtax-old-0123456789-0002", "batch")):  # a run in another namespace
        body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath",
                             "RequestedCapabilities": [{"AccessMode": "single-node-writer",
                                                        "AttachmentMode": "file-system"}]}]}
        httpx.put(f"{nomad.url}/v1/volume/csi/{vol}/create", json=body, params={"namespace": ns}).raise_for_status()

    code = cli(["volumes", "cleanup", "--campaign", "old", "--kubeconfig", str(sim.kubeconfig),
                "--nomad-addr", nomad.url])
    out = capfd.readouterr().out
    assert code == 0, out
    assert "removed persistentvolumeclaim default/podtax-vc-0123456789-0001" in out
    assert "removed nomad volume default/podtax-old-0123456789-0001" in out
    assert "removed nomad volume batch/podtax-old-0123456789-0002" in out  # every namespace by default
    assert "kubernetes: removed 2 object(s)" in out and "nomad: removed 2 object(s)" in out
    claims = sorted(o["metadata"]["name"] for o in sim.objects("persistentvolumeclaims"))
    assert claims == ["podtax-vc-abcdef0123-0001", "someone-elses"]
    deadline = time.monotonic() + 10
    while len(sim.objects("persistentvolumes")) != 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(sim.objects("persistentvolumes")) == 2  # the PVs of the removed claims are gone too
    assert sorted(v["ID"] for v in nomad.volumes()) == ["not-podtax", "podtax-keep-abcdef0123-0001"]

    assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig)]) == 0
    assert "removed persistentvolumeclaim default/podtax-vc-abcdef0123-0001" in capfd.readouterr().out
    assert [o["metadata"]["name"] for o in sim.objects("persistentvolumeclaims")] == ["someone-elses"]


def test_volumes_cleanup_usage_mistake_is_one_line(capfd: pytest.CaptureFixture[str]) -> None:
    assert cli(["volumes", "cleanup", "--backend", "ceph"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'ceph' is not one of kubernetes, nomad" in err
