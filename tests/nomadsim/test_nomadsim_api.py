"""The SIMULATED Nomad API (podtax nomadsim) against httpx: routes, Nomad's status codes and error
strings, headers, ACL, namespaces and blocking queries."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from podtax_nomadsim.testing import Sim

CAPS = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]


def volume(vol_id: str, plugin: str = "hostpath", **extra: Any) -> dict:
    return {"ID": vol_id, "Name": vol_id, "PluginID": plugin, "RequestedCapacityMin": 1 << 30,
            "RequestedCapacityMax": 2 << 30, "RequestedCapabilities": CAPS, **extra}


def create(sim: Sim, vol_id: str, namespace: str = "", **extra: Any) -> httpx.Response:
    query = f"?namespace={namespace}" if namespace else ""
    return httpx.put(f"{sim.url}/v1/volume/csi/{vol_id}/create{query}", json={"Volumes": [volume(vol_id, **extra)]},
                     headers=sim.headers())


def test_plugin_health_and_lists(nomadsim: Sim) -> None:
    r = httpx.get(f"{nomadsim.url}/v1/plugin/csi/hostpath")
    assert r.status_code == 200
    plugin = r.json()
    assert (plugin["ID"], plugin["ControllersHealthy"], plugin["NodesHealthy"]) == ("hostpath", 1, 1)
    assert plugin["ControllerRequired"] is True
    assert r.headers["X-Podtax-Simulated"] == "true"
    for header in ("X-Nomad-Index", "X-Nomad-LastContact", "X-Nomad-KnownLeader"):
        assert header in r.headers
    missing = httpx.get(f"{nomadsim.url}/v1/plugin/csi/nope")
    assert (missing.status_code, missing.text) == (404, "plugin not found")
    assert missing.headers["X-Nomad-Index"]  # as Nomad's: the read answered (setMeta), then found nothing
    refused = httpx.delete(f"{nomadsim.url}/v1/volume/csi/nope/delete")  # an RPC error: Nomad sets no meta headers
    assert (refused.status_code, refused.text) == (500, "volume not found: nope"), refused.text
    assert "X-Nomad-Index" not in refused.headers and refused.headers["X-Podtax-Simulated"] == "true"
    assert httpx.get(f"{nomadsim.url}/v1/plugins?type=csi").json()[0]["ID"] == "hostpath"
    assert httpx.get(f"{nomadsim.url}/v1/plugins").json() == []
    assert httpx.get(f"{nomadsim.url}/v1/status/leader").json().endswith(":4647")
    assert httpx.get(f"{nomadsim.url}/v1/agent/self").json()["config"]["Simulated"] is True


def test_create_get_list_delete(nomadsim: Sim) -> None:
    before = int(httpx.get(f"{nomadsim.url}/v1/volumes?type=csi").headers["X-Nomad-Index"])
    r = create(nomadsim, "vol-a")
    assert r.status_code == 200, r.text
    body = r.json()
    vol = body["Volumes"][0]
    assert vol["Capacity"] == 1 << 30 and vol["ExternalID"] == "sim://hostpath/default/vol-a"
    assert vol["Namespace"] == "default" and vol["RequestedCapabilities"] == CAPS
    assert body["Index"] == int(r.headers["X-Nomad-Index"]) > before
    assert {"LastContact", "KnownLeader", "Warnings"} <= body.keys()
    create(nomadsim, "vol-b")
    got = httpx.get(f"{nomadsim.url}/v1/volume/csi/vol-a")
    assert got.status_code == 200 and got.json()["Secrets"] is None and got.json()["ModifyIndex"] == body["Index"]
    # the answer's volume is the one sent through Raft, as Nomad's: its indexes are 0, the stored one's are not
    assert (vol["CreateIndex"], vol["ModifyIndex"]) == (0, 0) and got.json()["CreateIndex"] == body["Index"]
    stubs = httpx.get(f"{nomadsim.url}/v1/volumes?type=csi").json()
    assert [s["ID"] for s in stubs] == ["vol-a", "vol-b"]
    assert [s["ID"] for s in httpx.get(f"{nomadsim.url}/v1/volumes?type=csi&prefix=vol-b").json()] == ["vol-b"]
    assert httpx.get(f"{nomadsim.url}/v1/volumes?type=csi&plugin_id=other").json() == []
    assert httpx.get(f"{nomadsim.url}/v1/volumes").json() == []
    assert httpx.get(f"{nomadsim.url}/v1/volumes?type=weird").status_code == 404
    deleted = httpx.delete(f"{nomadsim.url}/v1/volume/csi/vol-a/delete")
    assert (deleted.status_code, deleted.text) == (200, "")
    gone = httpx.get(f"{nomadsim.url}/v1/volume/csi/vol-a")
    assert (gone.status_code, gone.text) == (404, "volume not found")
    again = httpx.delete(f"{nomadsim.url}/v1/volume/csi/vol-a/delete")
    assert (again.status_code, again.text) == (500, "volume not found: vol-a")
    assert again.headers["Content-Type"].startswith("text/plain")
    assert [c.op for c in nomadsim.controller_calls()] == ["create", "create", "delete"]


def test_errors_use_nomads_strings(nomadsim: Sim) -> None:
    url = nomadsim.url
    r = create(nomadsim, "v", plugin="nope")
    assert (r.status_code, r.text) == (500, "no CSI plugin named: nope could be found")
    r = httpx.put(f"{url}/v1/volume/csi/v/create", json={"Volumes": [{"ID": "v", "PluginID": "hostpath"}]})
    assert (r.status_code, r.text) == (500, "validation: must include at least one capability block")
    r = httpx.put(f"{url}/v1/volume/csi/v/create", json={})
    assert (r.status_code, r.text) == (500, "missing volume definition")
    r = httpx.put(f"{url}/v1/volume/csi/v/create", content=b"{not json")
    assert r.status_code == 400
    r = httpx.put(f"{url}/v1/volume/csi/v/create", content=b"")  # Go's http.NoBody: decodeBody says so
    assert (r.status_code, r.text) == (400, "Request body is empty")
    assert httpx.put(f"{url}/v1/volume/csi/v/create", content=b" \n").text == "EOF"  # a body, decoded: nothing
    r = httpx.put(f"{url}/v1/volume/csi/v/create", json={"Volumes": [volume("v", RequestedCapacityMin="1GiB")]})
    assert r.status_code == 400 and "RequestedCapacityMin of type int64" in r.text
    # a namespace that does not exist is refused by the Raft write, after the plugin made the volume (Nomad's Create,
    # then UpsertCSIVolume), in Create's multierror: the storage keeps a volume Nomad does not know of
    r = create(nomadsim, "v", namespace="nowhere")
    assert (r.status_code, r.text) == (500, "1 error occurred:\n\t* volume v is in nonexistent namespace nowhere\n\n")
    assert [c.op for c in nomadsim.controller_calls()] == ["create"] and nomadsim.volumes() == []
    assert nomadsim.orphans() == ["sim://hostpath/nowhere/v"]
    assert create(nomadsim, "v").status_code == 200
    # identical re-create: an update, 200, no second controller call
    assert create(nomadsim, "v").status_code == 200
    assert len(nomadsim.controller_calls()) == 2
    r = create(nomadsim, "v", Name="renamed")
    assert (r.status_code, r.text) == (500, "1 error occurred:\n\t* 1 error occurred:\n\t* volume name cannot be "
                                            "updated\n\n\n\n")
    reg = httpx.put(f"{url}/v1/volume/csi/v", json={"Volumes": [volume("v", ExternalID="other")]})
    assert (reg.status_code, reg.text) == (500, "volume identity cannot be updated: v")
    assert httpx.get(f"{url}/v1/volumes?type=csi&index=abc").text == "Invalid index"
    assert httpx.get(f"{url}/v1/volumes?type=csi&index=1&wait=5").text == "Invalid wait time"
    bad_force = httpx.delete(f"{url}/v1/volume/csi/v?force=maybe")
    assert (bad_force.status_code, bad_force.text) == (400, "invalid force value")
    assert httpx.post(f"{url}/v1/volume/csi/v/delete").status_code == 405
    assert httpx.post(f"{url}/v1/plugin/csi/hostpath").status_code == 405
    assert httpx.get(f"{url}/v1/volume/csi/v/what").status_code == 405  # as Nomad: other methods -> 405
    assert httpx.put(f"{url}/v1/volume/csi/v/what").status_code == 404
    assert httpx.get(f"{url}/v1/volume/csi/v/a/b").status_code == 404
    assert httpx.get(f"{url}/v1/volume/csi/v", params={"region": "mars"}).text == "No path to region"


def test_in_use_and_deregister(nomadsim: Sim) -> None:
    url = nomadsim.url
    assert create(nomadsim, "v").status_code == 200
    nomadsim.claim("v", "alloc-1")
    r = httpx.delete(f"{url}/v1/volume/csi/v/delete")
    assert (r.status_code, r.text) == (500, "volume in use: v")
    # as Nomad's Delete: the plugin's DeleteVolume first, then the deregister that refuses a claimed volume
    assert [c.op for c in nomadsim.controller_calls()] == ["create", "delete"] and len(nomadsim.volumes()) == 1
    assert httpx.delete(f"{url}/v1/volume/csi/v?force=true").text == "volume in use: v"  # the alloc still runs
    nomadsim.release("v", "alloc-1")
    nomadsim.claim("v", "alloc-2", terminal=True)
    assert httpx.delete(f"{url}/v1/volume/csi/v").text == "volume in use: v"
    r = httpx.delete(f"{url}/v1/volume/csi/v?force=true")
    assert (r.status_code, r.text) == (200, "")
    assert nomadsim.volumes() == []
    # register: no controller call, the external id kept
    reg = httpx.put(f"{url}/v1/volume/csi/ext", json={"Volumes": [volume("ext", ExternalID="disk-7")]})
    assert (reg.status_code, reg.content) == (200, b"") and int(reg.headers["X-Nomad-Index"]) > 0  # as Nomad's
    assert httpx.get(f"{url}/v1/volume/csi/ext").json()["ExternalID"] == "disk-7"
    assert [c.op for c in nomadsim.controller_calls()] == ["create", "delete"]  # the refused delete's only


def test_acl(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory(acl_token="s3cret")
    r = httpx.get(f"{sim.url}/v1/volumes?type=csi")
    assert (r.status_code, r.text) == (403, "Permission denied")
    r = httpx.get(f"{sim.url}/v1/volumes?type=csi", headers={"X-Nomad-Token": "wrong"})
    assert (r.status_code, r.text) == (403, "ACL token not found")
    assert create(sim, "v").status_code == 200  # sim.headers() carries the token
    r = httpx.get(f"{sim.url}/v1/volume/csi/v", headers={"Authorization": "Bearer s3cret"})
    assert r.status_code == 200
    assert httpx.delete(f"{sim.url}/v1/volume/csi/v/delete").status_code == 403
    assert len(sim.volumes()) == 1
    assert httpx.get(f"{sim.url}/v1/status/leader").status_code == 200


def test_namespace_isolation(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory({"namespaces": ["batch"]})
    assert create(sim, "v", namespace="batch").json()["Volumes"][0]["Namespace"] == "batch"
    assert httpx.get(f"{sim.url}/v1/volumes?type=csi").json() == []
    assert [v["Namespace"] for v in httpx.get(f"{sim.url}/v1/volumes?type=csi&namespace=batch").json()] == ["batch"]
    assert len(httpx.get(f"{sim.url}/v1/volumes?type=csi&namespace=*").json()) == 1
    assert httpx.get(f"{sim.url}/v1/volume/csi/v").status_code == 404
    assert httpx.delete(f"{sim.url}/v1/volume/csi/v/delete").text == "volume not found: v"
    assert create(sim, "v").status_code == 200  # the same id in another namespace is another volume
    assert httpx.delete(f"{sim.url}/v1/volume/csi/v/delete?namespace=batch").status_code == 200
    assert [(v["Namespace"], v["ID"]) for v in sim.volumes()] == [("default", "v")]


def test_blocking_query_returns_when_the_index_moves(nomadsim: Sim) -> None:
    url = nomadsim.url
    index = int(httpx.get(f"{url}/v1/volumes?type=csi").headers["X-Nomad-Index"])
    result: dict[str, httpx.Response] = {}

    def blocked() -> None:
        result["r"] = httpx.get(f"{url}/v1/volumes?type=csi&index={index}&wait=20s", timeout=30)

    thread = threading.Thread(target=blocked)
    thread.start()
    time.sleep(0.3)
    assert "r" not in result  # still blocked: nothing changed
    assert create(nomadsim, "v").status_code == 200
    thread.join(timeout=25)
    r = result["r"]
    assert int(r.headers["X-Nomad-Index"]) > index and [v["ID"] for v in r.json()] == ["v"]
    # a read of one volume blocks on that volume's ModifyIndex; wait expiry answers the same index
    vol_index = int(httpx.get(f"{url}/v1/volume/csi/v").headers["X-Nomad-Index"])
    r = httpx.get(f"{url}/v1/volume/csi/v?index={vol_index}&wait=100ms")
    assert r.status_code == 200 and int(r.headers["X-Nomad-Index"]) == vol_index


def test_refuse_creates_after(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory(refuse_creates_after=2)
    assert [create(sim, f"v{i}").status_code for i in range(2)] == [200, 200]
    r = create(sim, "v2")
    assert r.status_code == 500
    assert r.text.startswith("1 error occurred:\n\t* controller create volume: ") and "ResourceExhausted" in r.text
    assert [v["ID"] for v in sim.volumes()] == ["v0", "v1"]
    assert httpx.delete(f"{sim.url}/v1/volume/csi/v0/delete").status_code == 200  # cleanup still works
    sim.set_refuse_creates_after(None)
    assert create(sim, "v2").status_code == 200


def test_metrics_count_requests(nomadsim: Sim) -> None:
    for i in range(3):
        create(nomadsim, f"v{i}")
    httpx.get(f"{nomadsim.url}/v1/volume/csi/missing")
    for _ in range(2):
        text = httpx.get(f"{nomadsim.url}/metrics").text
    assert 'nomad_http_requests_total{code="200",method="PUT",path_template="/v1/volume/csi/:id/create"} 3.0' in text
    assert 'nomad_http_requests_total{code="404",method="GET",path_template="/v1/volume/csi/:id"} 1.0' in text
    assert "/metrics" not in text.replace("# HELP", "")  # scrapes are not counted


@pytest.mark.parametrize("cluster, field", [
    ({"plugins": [{"provider": "x"}]}, "plugins[0].id"),
    ({"plugins": [{"id": "a", "controllers": {"healthy": -1}}]}, "plugins[0].controllers.healthy"),
    ({"faults": {"refuseCreatesAfter": "many"}}, "faults.refuseCreatesAfter"),
    ({"faults": {"hangCreates": "-0003"}}, "faults.hangCreates"),  # the hang knobs are kubesim's (faults.py)
    ({"faults": {"hangCreate": ["-0003"]}}, "faults: unknown keys ['hangCreate']"),  # a typo hung nothing before
    # another resource's entry never matched a volume, and kubesim's watch drops are not nomadsim's (reviewer)
    ({"faults": {"hangDeletes": ["persistentvolumeclaims/-0003"]}}, "faults.hangDeletes: nomadsim's only resource"),
    ({"faults": {"dropWatches": [{"resource": "volumes"}]}}, "faults: unknown keys ['dropWatches']"),
])
def test_bad_cluster_file_names_the_field(nomadsim_factory: Callable[..., Sim], cluster: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        nomadsim_factory(cluster)


def test_a_hang_entry_may_name_volumes() -> None:
    from podtax_nomadsim.cluster import load

    hangs = load({"faults": {"hangDeletes": ["volumes/-0003"]}})["hangs"]
    assert hangs.hangs("delete", "volumes", "podtax-x-0003") and not hangs.hangs("delete", "volumes", "podtax-x-0004")


def test_namespaces(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory({"namespaces": ["batch"], "acl": {"token": "t", "readToken": "r"}})
    url, read = sim.url, {"X-Nomad-Token": "r"}
    names = httpx.get(f"{url}/v1/namespaces", headers=read)
    assert names.status_code == 200 and [n["Name"] for n in names.json()] == ["batch", "default"]
    got = httpx.get(f"{url}/v1/namespace/batch", headers=read)
    assert got.status_code == 200 and got.json()["Name"] == "batch" and "X-Nomad-Index" in got.headers
    missing = httpx.get(f"{url}/v1/namespace/nowhere", headers=read)
    assert (missing.status_code, missing.text) == (404, "Namespace not found") and "X-Nomad-Index" in missing.headers
    assert httpx.get(f"{url}/v1/namespace/batch").status_code == 403  # no token
    assert httpx.get(f"{url}/v1/namespace/", headers=read).text == "Missing Namespace Name"
