"""`podtax volumes cleanup` when an API keeps refusing one object's delete (429 at every attempt: a throttled API
server, kubesim's fault failDeletes; Nomad's connection limit, nomadsim's failRequests). Before, on Kubernetes the
ApiException ended the whole cleanup: 'could not clean up kubernetes (...): ApiException: (429)', the objects deleted
meanwhile not said and the one left not named. Now the refused delete leaves its object, named with the server's
answer and how often it was sent, the others are removed and said, and the command says how to finish the job."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from kubernetes import client, config
from podtax.cli.main import main as cli
from podtax_runner.controlplane.kubeapi import THROTTLED_ATTEMPTS, Kube, api_client

from tests.controlplane.conftest import cluster


def kube_config(path: Any) -> client.Configuration:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=cfg)
    return cfg


NAMES = ("podtax-vc-0123456789-0001", "podtax-vc-0123456789-0002", "podtax-vc-0123456789-0003")


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": {"podtax.io/kind": "control-plane", "podtax.io/campaign": "old"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def test_a_kubernetes_delete_throttled_at_every_attempt_leaves_its_claim_named(
        kubesim_factory: Any, capfd: pytest.CaptureFixture[str]) -> None:
    faults = {"failDeletes": [{"match": "persistentvolumeclaims/-0002", "status": 429, "times": 0, "retryAfter": 0}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    for name in NAMES:
        sim.create(claim(name))
    code = cli(["volumes", "cleanup", "--backend", "kubernetes", "--campaign", "old", "--kubeconfig",
                str(sim.kubeconfig)])
    out, err = capfd.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in err and "ApiException" not in err, err
    removed = [line for line in out.splitlines() if line.startswith("removed ")]
    assert removed == [f"removed persistentvolumeclaim default/{NAMES[0]}",
                       f"removed persistentvolumeclaim default/{NAMES[2]}"], out  # only what went
    assert "kubernetes: removed 2 object(s), 1 still present" in out, out
    left = [line for line in err.splitlines() if line.startswith("still present: ")]
    assert len(left) == 1 and f"persistentvolumeclaim default/{NAMES[1]}" in left[0], err
    assert "429 Too Many Requests" in left[0] and f"sent {THROTTLED_ATTEMPTS} times" in left[0], left
    assert "podtax volumes cleanup --backend kubernetes --campaign old" in err, err  # what to run again
    assert [o["metadata"]["name"] for o in sim.objects("persistentvolumeclaims")] == [NAMES[1]]
    counts = Kube(api_client(kube_config(sim.kubeconfig))).scrape() or {}
    assert counts.get("DELETE persistentvolumeclaims 429") == THROTTLED_ATTEMPTS, counts  # 429s did nothing


def test_a_nomad_delete_throttled_at_every_attempt_leaves_its_volume_named(
        nomadsim_factory: Any, capfd: pytest.CaptureFixture[str]) -> None:
    fails = [{"request": "DELETE /v1/volume/csi/:id/delete", "status": 429, "times": 0}]
    nomad = nomadsim_factory({"faults": {"failRequests": fails}})
    vol = "podtax-old-0123456789-0001"
    caps = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]
    body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath", "RequestedCapabilities": caps}]}
    httpx.put(f"{nomad.url}/v1/volume/csi/{vol}/create", json=body).raise_for_status()
    code = cli(["volumes", "cleanup", "--backend", "nomad", "--campaign", "old", "--nomad-addr", nomad.url])
    out, err = capfd.readouterr()
    assert code == 1, (out, err)
    assert "removed nomad" not in out and "nomad: removed 0 object(s), 1 still present" in out, out
    left = [line for line in err.splitlines() if line.startswith("still present: ")]
    assert len(left) == 1 and f"nomad volume default/{vol}" in left[0] and "429" in left[0], err
    assert "podtax volumes cleanup --backend nomad --campaign old" in err, err
    assert [v["ID"] for v in nomad.volumes()] == [vol]


def test_a_nomad_volume_in_use_is_said_held_by_an_allocation_and_cleaned_once_freed(
        nomadsim_factory: Any, capfd: pytest.CaptureFixture[str]) -> None:
    # Nomad's deregister refuses a volume an allocation claims (`volume in use`, a 500): before, the line said only
    # the answer and 'once that is mended, run ... again', not what holds it nor how to free it
    nomad = nomadsim_factory()
    vol = "podtax-old-0123456789-0002"
    caps = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]
    body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath", "RequestedCapabilities": caps}]}
    httpx.put(f"{nomad.url}/v1/volume/csi/{vol}/create", json=body).raise_for_status()
    nomad.claim(vol, "alloc-1")
    argv = ["volumes", "cleanup", "--backend", "nomad", "--campaign", "old", "--nomad-addr", nomad.url]
    code = cli(argv)
    out, err = capfd.readouterr()
    assert code == 1, (out, err)
    left = [line for line in err.splitlines() if line.startswith("still present: ")]
    assert len(left) == 1 and f"volume in use: {vol} (not sent again): an allocation still claims it" in left[0] \
        and "nomad volume status" in left[0], err
    nomad.release(vol, "alloc-1")  # its job stopped: the claim freed
    code = cli(argv)
    out, err = capfd.readouterr()
    assert code == 0 and [v["ID"] for v in nomad.volumes()] == [], (out, err)
