"""volume-churn against the simulated Nomad API: injected create latency recovered, deletes
serialized per plugin show in the makespan, ACL token and namespace honoured, a missing plugin is
refused before anything is created, and a server that refuses after 50 volumes leaves nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import anchor, assert_injected, lognormal, spec


def plugin(create: Any = 0.0, delete: Any = 0.0) -> dict[str, Any]:
    return {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": create, "deleteLatency": delete}


def test_nomad_phases_match_injected_latency(nomadsim_process: Any, run_cp: Any) -> None:
    # no delete latency: the delete round trip is the anchor (see below); the serialized deletes have
    # their own test. A median of 0.3 s: the anchor (20 deletes at once) is 40-70 ms on an idle machine,
    # so twice the injected latency must exceed SAMPLING, ABS and LOAD anchors by a margin (at 0.1 s it
    # would pass at p50)
    sim = nomadsim_process({"seed": 5, "plugins": [plugin(create=lognormal(0.3, 0.3))]})
    tl = run_cp(spec("volume-churn", env="nomad", count=120, concurrency=20, plugin_id="hostpath"), nomad=sim)
    lines = [json.loads(line) for line in tl.jsonl().splitlines()]
    assert lines[0]["backend"] == "nomad" and lines[0]["simulated"] is True
    objects = lines[1:-1]
    assert len(objects) == 120 and all("bound" not in o["t"] for o in objects)  # no Bound phase on Nomad
    assert all(o["name"].startswith("podtax-cp-") for o in objects)
    # Nomad's create is synchronous: the simulated Nomad (podtax_nomadsim.state: State.create ->
    # _controller) sleeps the injected CreateVolume latency inside the PUT's handler and answers once it
    # has slept, so api_accepted is the end of the phase, not an answer that the timer has started; no
    # timestamp comes between the timer starting and firing (no watch, no Bound). request_sent is thus
    # both the earliest the timer can have started (lower bound) and the latest timestamp known to
    # precede it (upper bound): the excess of request_sent -> api_accepted is the whole round trip (the
    # request's transit, the server's queue, the answer and threads waiting for a CPU), which is what the
    # anchor measures. The anchor, no latency injected: the delete round trip (delete_requested -> gone,
    # the same kind of HTTP call to the same server from the same 20 workers right after the creates;
    # with no delete latency the plugin's serializing lock is never held across an await)
    overhead = anchor(tl, ("delete_requested", "gone"))
    assert_injected(tl, "request_sent", "request_sent", "api_accepted", 0.3, overhead)
    summary = lines[-1]
    assert summary["requests"]["create"] == 120 and summary["requests"]["delete"] == 120
    server = summary["apiserver"]  # the simulated Nomad's own request counter agrees with the harness's
    assert server["after"]["PUT /v1/volume/csi/:id/create 200"] - server["before"].get(
        "PUT /v1/volume/csi/:id/create 200", 0) == 120
    assert summary["errors"] == 0 and summary["left_behind"] == 0 and sim.volumes() == []


def test_nomad_deletes_are_serialized_per_plugin(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [plugin(delete=0.002)]})
    tl = run_cp(spec("volume-churn", env="nomad", count=120, concurrency=20, plugin_id="hostpath"), nomad=sim)
    assert tl.errors() == 0 and tl.left_behind == 0
    # deletes are serialized per plugin (Nomad's serializedControllerRPC): the makespan shows it (20
    # deletes at once would take 6 x 2 ms)
    starts = [r.t["delete_requested"] for r in tl.objects.values()]
    ends = [r.t["gone"] for r in tl.objects.values()]
    assert max(ends) - min(starts) >= 120 * 0.002
    assert sim.volumes() == []


def test_each_volume_records_the_index_nomad_created_it_at(nomadsim_factory: Any, run_cp: Any) -> None:
    """Nomad's create answers the volume as sent through Raft, its CreateIndex 0 (nomadsim does so since the audit
    of 2026-12); the index is the answer's Index. Before, the timeline recorded create_index "0" for every volume."""
    sim = nomadsim_factory({"plugins": [plugin()]})
    tl = run_cp(spec("volume-churn", env="nomad", count=5, plugin_id="hostpath"), nomad=sim)
    indexes = [int(r.server["create_index"]) for r in tl.objects.values()]
    assert tl.errors() == 0 and min(indexes) > 0 and len(set(indexes)) == 5, indexes  # one Raft write each


def test_nomad_acl_token_and_namespace(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"namespaces": ["batch"], "acl": {"token": "s3cret"}, "plugins": [plugin()]})
    tl = run_cp(spec("volume-churn", env="nomad", count=5, plugin_id="hostpath", namespace="batch"), nomad=sim)
    assert tl.errors() == 0 and all("gone" in r.t for r in tl.objects.values())
    anonymous = type("NoToken", (), {"url": sim.url, "token": None})()
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=5, plugin_id="hostpath", rep=1), nomad=anonymous)
    assert info.value.reason == "nomad-forbidden" and "PODTAX_RUNNER_NOMAD_TOKEN" in info.value.detail


def test_missing_plugin_is_refused_first(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory()
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=5, plugin_id="no-such-plugin"), nomad=sim)
    assert info.value.reason == "plugin-missing" and "plugin_id" in info.value.detail
    assert "Nomad has no CSI plugin 'no-such-plugin' (plugins: hostpath): set plugin_id to one of them" \
        in info.value.detail
    assert sim.volumes() == []


def test_refusing_after_50_leaves_nothing(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [plugin(create=0.005)], "faults": {"refuseCreatesAfter": 50}})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=100, concurrency=10, plugin_id="hostpath"), nomad=sim)
    assert info.value.reason == "api-errors"
    assert sim.volumes() == []


def test_a_create_whose_answer_was_lost_leaves_no_volume(nomadsim_factory: Any, run_cp: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's proxy answered 500 after Nomad had created the 3rd volume: the run recorded the create
    as failed, never deleted the volume, and said left_behind 0. The lost answer is simulated here: the
    real nomadsim creates the volume, then the client is told 500 (a timeout or a proxy would do so)."""
    from podtax_runner.controlplane import nomad as client

    real = client.Nomad.request

    def lossy(self: Any, verb: str, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        out = real(self, verb, method, path, *args, **kwargs)
        if verb == "create" and path.endswith("0003/create"):
            raise client.NomadError(500, "upstream connect error or disconnect/reset before headers")
        return out

    monkeypatch.setattr(client.Nomad, "request", lossy)
    sim = nomadsim_factory({"plugins": [plugin()]})
    tl = run_cp(spec("volume-churn", env="nomad", count=6, concurrency=1, plugin_id="hostpath"), nomad=sim)
    assert sim.volumes() == [] and tl.left_behind == 0  # found by the run's prefix and deleted
    summary = json.loads(tl.jsonl().splitlines()[-1])
    assert summary["errors"] == 1


@pytest.mark.parametrize("status,text,retried", [
    (503, "No cluster leader", True),   # transient: retried as Kubernetes calls are, the volume is made
    (429, "rate limited", True),
    (500, "rpc error: No cluster leader", True),
    (500, "no CSI plugin named: hostpath could be found", False),  # Nomad's permanent answers are not
])
def test_nomad_calls_are_retried_as_kubernetes_calls_are(nomadsim_factory: Any, run_cp: Any,
                                                          monkeypatch: pytest.MonkeyPatch, status: int, text: str,
                                                          retried: bool) -> None:
    """An audit: one 500 lost a Nomad volume while Kubernetes retried the same trouble, so Nomad came out
    with fewer objects. INJECTED: the first create of one volume is answered here, not by nomadsim."""
    import httpx

    real, hit = httpx.Client.request, []

    def once(self: Any, method: str, url: Any, *args: Any, **kwargs: Any) -> Any:
        if str(url).endswith("0002/create") and not hit:
            hit.append(1)
            return httpx.Response(status, text=text)
        return real(self, method, url, *args, **kwargs)

    monkeypatch.setattr(httpx.Client, "request", once)
    sim = nomadsim_factory({"plugins": [plugin()]})
    tl = run_cp(spec("volume-churn", env="nomad", count=4, concurrency=1, plugin_id="hostpath"), nomad=sim)
    assert tl.errors() == (0 if retried else 1) and sim.volumes() == [] and tl.left_behind == 0
    summary = json.loads(tl.jsonl().splitlines()[-1])
    assert summary["requests"]["create"] == 4 + (1 if retried else 0)  # every attempt is counted
