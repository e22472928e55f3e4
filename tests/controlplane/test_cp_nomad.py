"""volume-churn against the simulated Nomad API: injected create latency recovered, deletes
serialized per plugin show in the makespan, ACL token and namespace honoured, a missing plugin is
refused before anything is created, and a server that refuses after 50 volumes leaves nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import lognormal, lognormal_quantile, phase, quantile, spec

REL, ABS = 0.25, 0.030  # as for Kubernetes: within 25 % + 30 ms of the injected quantile


def plugin(create: Any = 0.0, delete: Any = 0.0) -> dict[str, Any]:
    return {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": create, "deleteLatency": delete}


def test_nomad_phases_match_injected_latency(nomadsim_process: Any, run_cp: Any) -> None:
    sim = nomadsim_process({"seed": 5, "plugins": [plugin(create=lognormal(0.1, 0.3), delete=0.002)]})
    tl = run_cp(spec("volume-churn", env="nomad", count=120, concurrency=20, plugin_id="hostpath"), nomad=sim)
    lines = [json.loads(line) for line in tl.jsonl().splitlines()]
    assert lines[0]["backend"] == "nomad" and lines[0]["simulated"] is True
    objects = lines[1:-1]
    assert len(objects) == 120 and all("bound" not in o["t"] for o in objects)  # no Bound phase on Nomad
    assert all(o["name"].startswith("podtax-cp-") for o in objects)
    accepted = phase(tl, "request_sent", "api_accepted")
    for q in (0.5, 0.9):
        injected = lognormal_quantile(0.1, 0.3, q)
        assert abs(quantile(accepted, q) - injected) <= REL * injected + ABS, (q, quantile(accepted, q))
    # deletes are serialized per plugin (Nomad's serializedControllerRPC): the makespan shows it
    starts = [r.t["delete_requested"] for r in tl.objects.values()]
    ends = [r.t["gone"] for r in tl.objects.values()]
    assert max(ends) - min(starts) >= 120 * 0.002
    summary = lines[-1]
    assert summary["requests"]["create"] == 120 and summary["requests"]["delete"] == 120
    server = summary["apiserver"]  # the simulated Nomad's own request counter agrees with the harness's
    assert server["after"]["PUT /v1/volume/csi/:id/create 200"] - server["before"].get(
        "PUT /v1/volume/csi/:id/create 200", 0) == 120
    assert summary["errors"] == 0 and summary["left_behind"] == 0 and sim.volumes() == []


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
    assert sim.volumes() == []


def test_refusing_after_50_leaves_nothing(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [plugin(create=0.005)], "faults": {"refuseCreatesAfter": 50}})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=100, concurrency=10, plugin_id="hostpath"), nomad=sim)
    assert info.value.reason == "api-errors"
    assert sim.volumes() == []
