"""The control-plane timeline parser on hand-made timelines: every percentile and makespan below was
worked out by hand (linear interpolation between order statistics), and every kind of garbage is
refused with a reason that names what is wrong."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from podtax import events
from podtax.cli.main import app
from podtax.derive import derive
from podtax.parsers import ParseFailure, parse_run, parse_text, timeline
from typer.testing import CliRunner

K8S_T = [  # request_sent, api_accepted, pv_created, bound, delete_requested, gone, pv_gone
    (0.0, 0.010, 0.100, 0.200, 1.000, 1.050, 1.100),
    (0.0, 0.020, 0.200, 0.300, 1.000, 1.100, 1.300),
    (0.5, 0.530, 0.800, 0.900, 1.500, 1.520, 1.600),
    (0.5, 0.540, 0.900, 1.100, 1.500, 1.600, 2.000),
]
K8S_KEYS = ("request_sent", "api_accepted", "pv_created", "bound", "delete_requested", "gone", "pv_gone")


def header(template: str = "volume-churn", backend: str = "kubernetes", **extra: Any) -> dict[str, Any]:
    return {"kind": "header", "template": template, "backend": backend, "format": 1, "params": {"count": 4},
            "t0_unix": 1764554400.123, "observe": "watch", "simulated": True, **extra}


def obj(name: str, t: dict[str, float], error: str | None = None) -> dict[str, Any]:
    return {"kind": "object", "name": name, "t": t, "server": {}, "error": error}


def summary(**extra: Any) -> dict[str, Any]:
    return {"kind": "summary", "requests": {"create": 4, "delete": 4, "watch": 2, "list": 0, "get": 0},
            "apiserver": {"before": {"POST persistentvolumeclaims 201": 10},
                          "after": {"POST persistentvolumeclaims 201": 14, "WATCH persistentvolumeclaims 200": 2}},
            "errors": 0, "left_behind": 0, "wall_s": 2.5, **extra}


def lines(*records: dict[str, Any]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def k8s_log(**summary_extra: Any) -> str:
    objs = [obj(f"podtax-vc-r1-{i:04d}", dict(zip(K8S_KEYS, t, strict=True))) for i, t in enumerate(K8S_T, 1)]
    return lines(header(), *objs, summary(**summary_extra))


def values(text: str, test: str | None = "volume-churn") -> dict[str, float]:
    return parse_text(text, test).values()


def test_kubernetes_percentiles_and_makespans_by_hand() -> None:
    v = values(k8s_log())
    approx = pytest.approx
    # provisioned: 0.1 0.2 0.3 0.4 s -> p50 at 1.5 = 0.25, p95 at 2.85 = 0.385, p99 at 2.97 = 0.397
    assert v["provisioned_p50_ms"] == approx(250.0)
    assert v["provisioned_p95_ms"] == approx(385.0)
    assert v["provisioned_p99_ms"] == approx(397.0)
    assert v["provisioned_max_ms"] == approx(400.0)
    assert v["provisioned_makespan_s"] == approx(0.9)  # last PV at 0.9 - first request at 0.0
    assert v["accepted_p50_ms"] == approx(25.0) and v["accepted_makespan_s"] == approx(0.54)
    assert v["bound_p50_ms"] == approx(350.0) and v["bound_max_ms"] == approx(600.0)
    assert v["bound_makespan_s"] == approx(1.1)
    assert v["deleted_p50_ms"] == approx(75.0) and v["deleted_makespan_s"] == approx(0.6)
    # pv_deleted: 0.1 0.1 0.3 0.5 -> p50 0.2, p95 0.3 + 0.2 * 0.85 = 0.47; makespan 2.0 - 1.0
    assert v["pv_deleted_p50_ms"] == approx(200.0) and v["pv_deleted_p95_ms"] == approx(470.0)
    assert v["pv_deleted_makespan_s"] == approx(1.0)
    assert v["objects_ok"] == 4 and v["errors"] == 0
    assert v["requests_per_object"] == approx(10 / 4)
    assert v["server_requests_per_object"] == approx(6 / 4)
    assert v["wall_s"] == approx(2.5)
    assert "consumer_running_p50_ms" not in v  # consumer: true was not asked for


def test_units_and_directions() -> None:
    parsed = parse_text(k8s_log(), "volume-churn")
    assert parsed.tool == "volume-churn" and parsed.tool_version is None
    by_name = {m.name: m for m in parsed.metrics}
    assert (by_name["bound_p99_ms"].unit, by_name["bound_p99_ms"].higher_is_better) == ("ms", False)
    assert (by_name["bound_makespan_s"].unit, by_name["bound_makespan_s"].higher_is_better) == ("s", False)
    assert by_name["objects_ok"].higher_is_better and not by_name["errors"].higher_is_better
    assert not by_name["requests_per_object"].higher_is_better
    assert parsed.echoed == {"backend": "kubernetes", "count": 4, "observe": "watch", "format": 1, "simulated": 1}


def nomad_log() -> str:
    ts = [(0.0, 0.05, 1.0, 1.1), (0.0, 0.15, 1.0, 1.3), (0.1, 0.2, 1.0, 1.2)]
    objs = [obj(f"podtax-vc-{i}", dict(zip(("request_sent", "api_accepted", "delete_requested", "gone"), t,
                                           strict=True))) for i, t in enumerate(ts)]
    return lines(header(backend="nomad"), *objs, summary(apiserver=None))


def test_nomad_has_no_bound_phase() -> None:
    v = values(nomad_log())
    assert v["provisioned_p50_ms"] == pytest.approx(100.0)  # 0.05 0.10 0.15
    assert v["provisioned_makespan_s"] == pytest.approx(0.2)
    # its synchronous delete pairs with Kubernetes' PV deletion, not with the claim's DELETED event
    assert v["pv_deleted_p50_ms"] == pytest.approx(200.0) and v["pv_deleted_makespan_s"] == pytest.approx(0.3)
    assert not any(k.startswith(("bound_", "deleted_", "accepted_")) for k in v)
    assert "server_requests_per_object" not in v and v["objects_ok"] == 3


def test_pod_startup() -> None:
    keys = ("request_sent", "scheduled", "started", "ready", "delete_requested", "gone")
    ts = [(0.0, 0.01, 0.5, 0.6, 2.0, 2.5), (0.1, 0.13, 0.7, 0.9, 2.0, 2.2)]
    objs = [obj(f"p{i}", dict(zip(keys, t, strict=True))) for i, t in enumerate(ts)]
    v = values(lines(header("pod-startup"), *objs, summary()), "pod-startup")
    assert v["ready_p50_ms"] == pytest.approx(700.0)  # 0.6 and 0.8 -> midpoint
    assert v["scheduled_max_ms"] == pytest.approx(30.0)
    assert v["ready_makespan_s"] == pytest.approx(0.9)
    assert v["deleted_p50_ms"] == pytest.approx(350.0)


def test_failed_objects_are_counted_and_flagged() -> None:
    objs = [obj(f"v{i}", dict(zip(K8S_KEYS, t, strict=True))) for i, t in enumerate(K8S_T[:3])]
    objs.append(obj("v3", {"request_sent": 0.5, "api_accepted": 0.52}, error="provisioning failed: quota"))
    parsed = parse_run("volume-churn", lines(header(), *objs, summary(errors=1, left_behind=2)),
                       requested={"count": 5})
    v = parsed.values()
    assert v["objects_ok"] == 3 and v["errors"] == 1
    assert v["provisioned_p50_ms"] == pytest.approx(200.0)  # the failed claim has no PV: 0.1 0.2 0.3
    assert v["accepted_max_ms"] == pytest.approx(30.0)  # its accepted phase still counts
    text = "\n".join(parsed.flags)
    assert "ERRORS: 1 of 4 objects failed (first: v3: provisioning failed: quota)" in text
    assert "LEFT_BEHIND: 2" in text and "SHORT: 4 of the 5 requested objects" in text


@pytest.mark.parametrize(("text", "reason", "words"), [
    ("", "empty", "empty"),
    ("hello\n", "unknown-format", "line 1 is not valid JSON"),
    (lines(obj("a", {})), "unknown-format", "no header"),
    ('{"kind": "header", "template": "volume-churn", "backend": "kubernetes"}\n[1, 2]\n',
     "unknown-format", "line 2 is not a timeline record"),
    (lines(header("disk-churn")), "unknown-format", "unknown template 'disk-churn'"),
    (lines(header(backend="swarm")), "unknown-format", "no phases are defined for volume-churn on 'swarm'"),
    (lines(header(), header()), "unknown-format", "a second header"),
    (lines(header(), *[obj("a", dict(zip(K8S_KEYS, K8S_T[0], strict=True)))] * 2, summary()), "unknown-format",
     "line 3: object 'a' appears a second time"),
    (lines(header(), obj("a", dict(zip(K8S_KEYS, K8S_T[0], strict=True))), summary(), summary()), "unknown-format",
     "line 4: a second summary"),
    (lines(header()) + '{"kind": "object", "name": "a", "t": {"request_sent": NaN}}\n', "unknown-format",
     "NaN is not a finite number"),
    (lines(header()) + '{"kind": "object", "name": "a", "t": {"request_sent": 1e999}}\n', "unknown-format",
     "t.request_sent is not a finite number"),
    (lines(header(), obj("a", {"request_sent": "soon"})), "unknown-format", "must be a number of seconds"),
    (lines(header(), obj("a", {"request_sent": 1.0, "pv_created": 0.5})), "unknown-format",
     "line 2 (a): provisioned is negative"),
    (lines(header()), "truncated", "no object"),
    (lines(header(), obj("a", dict(zip(K8S_KEYS, K8S_T[0], strict=True)))), "truncated", "no summary line"),
    (lines(header(), obj("a", {"request_sent": 0.0}, error="no such storage class"), summary()), "fatal",
     "none of the 1 objects completed (first error: a: no such storage class)"),
])
def test_garbage_is_refused_with_a_reason(text: str, reason: str, words: str) -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text(text, "volume-churn")
    assert info.value.reason == reason
    assert words in info.value.detail


def test_wrong_template_and_autodetection() -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text(k8s_log(), "pod-startup")
    assert info.value.reason == "wrong-tool" and "volume-churn timeline" in info.value.detail
    assert parse_text(k8s_log()).tool == "volume-churn"  # detected from the header line
    assert parse_text(k8s_log(), "timeline").values()["objects_ok"] == 4


def test_percentile_matches_numpy_linear() -> None:
    np = pytest.importorskip("numpy")
    data = [0.3, 0.01, 7.0, 2.5, 2.5, 0.9, 4.0]
    for q in (0, 1, 50, 95, 99, 100):
        assert timeline.percentile(data, q) == pytest.approx(float(np.percentile(data, q)))


def test_derive_turns_a_raw_log_into_a_result() -> None:
    run = events.RunSpec(run_id="r1", campaign="c", node="n1", env="nomad", test="volume-churn",
                         params={"count": 4})
    now = datetime.now(UTC)
    log = events.RawLog(run=run, stdout=k8s_log(), exit_code=0, started_at=now, ended_at=now,
                        tool_version="Kubernetes v1.30.0 (simulated)")
    out = derive(log)
    assert isinstance(out, events.ResultV1)
    assert out.data.tool == "volume-churn" and out.data.tool_version is None  # never a CONFOUNDED build
    assert {m.name for m in out.data.metrics} >= {"provisioned_makespan_s", "bound_p50_ms", "objects_ok"}
    bad = derive(log.model_copy(update={"stdout": "not json\n"}))
    assert isinstance(bad, events.RunFailedV1) and bad.data.reason == "unknown-format"


def test_podtax_parse_cli(tmp_path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(k8s_log())
    bad.write_text(lines(header(), obj("a", {"request_sent": 2.0, "api_accepted": 1.0}), summary()))
    result = CliRunner().invoke(app, ["parse", str(good), str(bad), "--json"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out[0]["tool"] == "volume-churn"
    assert {m["name"]: m["value"] for m in out[0]["metrics"]}["provisioned_makespan_s"] == pytest.approx(0.9)
    assert out[1]["error"]["reason"] == "unknown-format" and "accepted is negative" in out[1]["error"]["detail"]


def test_podtax_import_takes_a_nomad_timeline(tmp_path) -> None:
    from podtax.cli.importer import ManifestError, build_event, read_manifest

    (tmp_path / "nomad.jsonl").write_text(nomad_log())
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("file,node,env,test,params,started_at\n"
                        "nomad.jsonl,node-1,nomad,volume-churn,count=3,2026-12-01T02:00:00Z\n")
    event = build_event(read_manifest(manifest)[0], "imported", 0)
    assert event.data.run.env == "nomad"
    assert (event.data.ended_at - event.data.started_at).total_seconds() == pytest.approx(2.5)  # the summary's wall_s
    out = derive(event.data)
    assert isinstance(out, events.ResultV1) and out.data.tool == "volume-churn"
    manifest.write_text("file,node,env,test,params,started_at\n"
                        "nomad.jsonl,node-1,nomad,sysbench-cpu,threads=1,2026-12-01T02:00:00Z\n"
                        "nomad.jsonl,node-1,host,volume-churn,count=3,2026-12-01T02:00:00Z\n")
    with pytest.raises(ManifestError) as info:
        read_manifest(manifest)
    assert "env 'nomad' must be host or kubernetes" in info.value.problems[0]
    assert "env 'host' must be kubernetes or nomad for volume-churn" in info.value.problems[1]
