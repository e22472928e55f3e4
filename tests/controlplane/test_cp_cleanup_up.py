"""`podtax volumes cleanup` finds the kubesim and nomadsim a running `podtax up` started in its up.json,
as other commands find its NATS there; an explicit --kubeconfig / --nomad-addr still wins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from podtax import natsserver
from podtax.cli.main import main as cli

from tests.controlplane.conftest import cluster

CLAIM = "podtax-vc-0123456789-0001"
VOLUME = "podtax-old-0123456789-0001"


def leave_behind(sim: Any, nomad: Any) -> None:
    """One claim and one Nomad volume of campaign `old`, as a killed run leaves them."""
    sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": CLAIM, "labels": {"podtax.io/kind": "control-plane", "podtax.io/campaign": "old"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    capability = {"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}
    body = {"Volumes": [{"ID": VOLUME, "Name": VOLUME, "PluginID": "hostpath", "RequestedCapabilities": [capability]}]}
    httpx.put(f"{nomad.url}/v1/volume/csi/{VOLUME}/create", json=body).raise_for_status()


@pytest.mark.parametrize("up,options,code", [
    ("sims", [], 0),  # found in up.json (before NOMAD_ADDR, which names nothing listening)
    (None, [], 1),  # no `podtax up` running: nothing to find
    ("dead", ["--kubeconfig", "{kubeconfig}", "--nomad-addr", "{nomad}"], 0),  # explicit wins over up.json
])
def test_cleanup_finds_what_podtax_up_started(kubesim_factory: Any, nomadsim_factory: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
                                              up: str | None, options: list[str], code: int) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    nomad = nomadsim_factory({})
    leave_behind(sim, nomad)
    dead = f"http://127.0.0.1:{natsserver.free_port()}"
    data = tmp_path / "data"
    data.mkdir()
    if up:
        found = ({"kubeconfig": str(sim.kubeconfig), "nomad_addr": nomad.url} if up == "sims"
                 else {"kubeconfig": str(tmp_path / "gone.yaml"), "nomad_addr": dead})
        (data / "up.json").write_text(json.dumps({"nats_url": "nats://127.0.0.1:1", **found}))
    for name in ("PODTAX_RUNNER_KUBECONFIG", "PODTAX_RUNNER_NOMAD_ADDR", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PODTAX_DATA_DIR", str(data))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to fall back on
    monkeypatch.setenv("NOMAD_ADDR", dead)
    args = [o.format(kubeconfig=sim.kubeconfig, nomad=nomad.url) for o in options]

    assert cli(["volumes", "cleanup", "--campaign", "old", *args]) == code
    out, err = capfd.readouterr()
    claims = [o["metadata"]["name"] for o in sim.objects("persistentvolumeclaims")]
    volumes = [v["ID"] for v in nomad.volumes()]
    if code == 0:
        assert f"removed persistentvolumeclaim default/{CLAIM}" in out
        assert f"removed nomad volume default/{VOLUME}" in out
        assert claims == [] and volumes == []
    else:
        assert "could not clean up kubernetes" in err and "could not clean up nomad" in err
        assert claims == [CLAIM] and volumes == [VOLUME]
