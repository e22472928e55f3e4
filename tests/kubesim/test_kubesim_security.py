"""The emulator's doors (issue 12, item 5): bearer-token authentication written into the kubeconfig,
loopback only for the exec kubelet, pod security admission (403 for hostPath, privileged, host
namespaces unless allowed) and runAsUser/runAsGroup honoured by exec-mode containers."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from podtax_kubesim.core import Emulator
from podtax_kubesim.testing import Sim

ONE_NODE = {"nodes": [{"name": "local"}]}
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


def http(sim: Sim, path: str, token: str | None = None) -> tuple[int, dict | str]:
    req = urllib.request.Request(sim.url + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    assert sim.emulator.tls is not None
    ctx = ssl.create_default_context(cadata=sim.emulator.tls.ca_pem.decode())
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            body, code = resp.read().decode(), resp.status
    except urllib.error.HTTPError as exc:
        body, code = exc.read().decode(), exc.code
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body


def test_api_needs_the_bearer_token_from_the_kubeconfig(kubesim: Sim) -> None:
    assert kubesim.url.startswith("https://127.0.0.1:")
    code, body = http(kubesim, "/api/v1/nodes")
    assert code == 401 and isinstance(body, dict) and body["reason"] == "Unauthorized"
    assert http(kubesim, "/api/v1/nodes", "wrong-token")[0] == 401
    assert http(kubesim, "/api/v1/nodes", kubesim.token)[0] == 200
    assert http(kubesim, "/healthz") == (200, "ok")
    cfg = yaml.safe_load(kubesim.kubeconfig.read_text())
    assert cfg["users"][0]["user"]["token"] == kubesim.token
    assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    assert stat.S_IMODE(kubesim.kubeconfig.stat().st_mode) == 0o600
    api = config.new_client_from_config(str(kubesim.kubeconfig))  # the kubernetes client sends it
    assert len(client.CoreV1Api(api).list_node().items) > 0


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kubectl_sends_the_token_over_tls(kubesim: Sim) -> None:
    proc = subprocess.run(["kubectl", "--kubeconfig", str(kubesim.kubeconfig), "get", "nodes", "-o", "name"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "node/" in proc.stdout


def test_exec_kubelet_listens_on_loopback_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loopback only"):
        Emulator(ONE_NODE, "exec", tmp_path, host="0.0.0.0")
    with pytest.raises(ValueError, match="authentication"):
        Emulator(ONE_NODE, "exec", tmp_path, token="")
    proc = subprocess.run([sys.executable, "-m", "podtax_kubesim", "--kubelet", "exec", "--host", "0.0.0.0",
                           "--kubeconfig", str(tmp_path / "kc.yaml")], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "loopback only" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "kc.yaml").exists()


def pod(name: str, **spec: object) -> dict:
    container = {"name": "c", "image": "i", "command": ["true"]}
    container.update(spec.pop("container", {}))  # type: ignore[arg-type]
    return {"metadata": {"name": name}, "spec": {"restartPolicy": "Never", "containers": [container], **spec}}


HOSTILE = [
    ("hostpath", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, 'hostPath volumes ("root")'),
    ("privileged", {"container": {"securityContext": {"privileged": True}}}, 'container "c" must not set'),
    ("hostnet", {"hostNetwork": True, "hostPID": True}, "host namespaces (hostNetwork=true, hostPID=true)"),
    ("hostipc", {"hostIPC": True}, "hostIPC=true"),
]


@pytest.mark.parametrize(("name", "spec", "words"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_pods_that_ask_for_the_host_are_forbidden(kubesim_factory, name: str, spec: dict,  # type: ignore[no-untyped-def]
                                                  words: str) -> None:
    sim = kubesim_factory(ONE_NODE, kubelet="exec")
    core = client.CoreV1Api(sim.api_client())
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod(name, **spec))
    assert info.value.status == 403
    status = json.loads(info.value.body)
    assert status["kind"] == "Status" and status["reason"] == "Forbidden"
    assert 'violates PodSecurity "baseline:latest"' in status["message"] and words in status["message"]
    assert sim.get("pods", name, "default") is None


def test_allow_privileged_admits_them(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(ONE_NODE, kubelet="none", allow_privileged=True)
    core = client.CoreV1Api(sim.api_client())
    for name, spec, _ in HOSTILE:
        core.create_namespaced_pod("default", pod(name, **spec))
    assert {p["metadata"]["name"] for p in sim.objects("pods", "default")} == {h[0] for h in HOSTILE}


def test_job_with_a_privileged_template_creates_no_pod(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(ONE_NODE, kubelet="none")
    batch = client.BatchV1Api(sim.api_client())
    template = pod("x", container={"securityContext": {"privileged": True}})
    batch.create_namespaced_job("default", {"metadata": {"name": "evil"},
                                            "spec": {"template": {"spec": template["spec"]}}})
    events = sim.wait_for(lambda: [e for e in sim.objects("events", "default") if e["reason"] == "FailedCreate"])
    assert "forbidden" in events[0]["message"]
    assert sim.objects("pods", "default") == []


def run_log(sim: Sim, name: str, **spec: object) -> tuple[dict, str]:
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_pod("default", pod(name, **spec))
    done = sim.wait_for_phase("default", name, timeout=20)
    return done, core.read_namespaced_pod_log(name, "default")


@root_only
@pytest.mark.parametrize("isolation", [True, False], ids=["isolated", "plain"])
def test_run_as_user_and_group_drop_root(kubesim_factory, isolation: bool) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(ONE_NODE, kubelet="exec", isolation=isolation)
    done, log = run_log(sim, "nobody", securityContext={"runAsUser": 65534, "runAsGroup": 65533,
                                                        "supplementalGroups": [4242]},
                        container={"command": ["sh", "-c", "id -u; id -g; id -G; touch ok"]})
    assert done["status"]["phase"] == "Succeeded", log
    uid, gid, groups = log.splitlines()[0], log.splitlines()[1], log.splitlines()[2].split()
    assert (uid, gid) == ("65534", "65533") and "0" not in groups and "4242" in groups
    done, log = run_log(sim, "override", securityContext={"runAsUser": 65534},
                        container={"command": ["id", "-u"], "securityContext": {"runAsUser": 1234}})
    assert log.strip() == "1234"


def test_run_as_non_root_refuses_root(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(ONE_NODE, kubelet="exec", isolation=False)
    done, log = run_log(sim, "nonroot", securityContext={"runAsNonRoot": True})
    assert done["status"]["phase"] == "Failed"
    assert "runAsNonRoot" in log


def test_podtax_up_starts_the_exec_kubelet_only_when_asked(tmp_path: Path) -> None:
    from podtax.cli.up import _kubesim_child

    for asked, mode in ((False, "simulated"), (True, "exec")):
        child, _ = _kubesim_child(tmp_path, "node-1", {}, asked)
        assert child.argv[child.argv.index("--kubelet") + 1] == mode
        assert "--host" not in child.argv  # the default: 127.0.0.1
