"""Objects given up while waiting count in the tail figures (audit: a run in which a tenth of the claims never
bound reported the survivors' p99). The parser counts an object given up in phase P at its time in P until it
was given up, a lower bound, and names each figure resting on such a time in the run flag LOWER_BOUND; an object
that failed before P started (a 409 on create) is not in P. Through the real parser, then a real run against
kubesim with a claim that never binds, stored in a real DuckDB file and read by the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from podtax import events
from podtax.derive import derive
from podtax.parsers import timeline as parser
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.controlplane.conftest import cluster, spec
from tests.controlplane.test_cp_stragglers import NEVER_BOUND, stick
from tests.report.conftest import cli_output, json_cells, serve

COUNT = 20
GIVEN_UP_S = 5.012  # when the stuck claim was given up, since its request


def _object(i: int, error: str | None = None) -> dict[str, Any]:
    """Claim i: accepted after 10 ms, provisioned after 100 + i ms (100..119), bound 50 ms later, deleted."""
    start = 0.001 * i
    t = {"request_sent": start, "api_accepted": start + 0.010, "pv_created": start + 0.100 + 0.001 * i,
         "bound": start + 0.150 + 0.001 * i, "delete_requested": 6.0, "gone": 6.05, "pv_gone": 6.1}
    return {"kind": "object", "name": f"podtax-vc-abc-{i:04d}", "t": t, "server": {}, "error": error}


def _stuck(i: int) -> dict[str, Any]:
    """Accepted, never provisioned nor bound: given up GIVEN_UP_S after its request (as wait_for records it)."""
    obj = _object(i, f"not Bound after {GIVEN_UP_S:.1f} s since request_sent (...): given up, the run went on")
    start = obj["t"]["request_sent"]
    obj["t"] = {"request_sent": start, "api_accepted": start + 0.010, "given_up": start + GIVEN_UP_S,
                "delete_requested": 6.0, "gone": 6.05, "pv_gone": 6.1}
    return obj


def _conflict(i: int) -> dict[str, Any]:
    """Refused on create (409): no phase started."""
    return {"kind": "object", "name": f"podtax-vc-abc-{i:04d}", "t": {"request_sent": 0.001 * i}, "server": {},
            "error": "create: 409 Conflict"}


def _timeline(last: dict[str, Any]) -> str:
    objects = [_object(i) for i in range(COUNT - 1)] + [last]
    lines = [{"kind": "header", "template": "volume-churn", "backend": "kubernetes", "format": 1, "params": {}},
             *objects, {"kind": "summary", "requests": {"create": COUNT}, "errors": 0, "left_behind": 0,
                        "wall_s": 6.2}]
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _survivors(n: int) -> list[float]:
    """provisioned of the first n claims, ms: 100 + i."""
    return [100.0 + i for i in range(n)]


def _lower_bound_metrics(flags: tuple[str, ...]) -> set[str]:
    found = [f for f in flags if f.startswith("LOWER_BOUND: ")]
    return set(found[0].removeprefix("LOWER_BOUND: ").split(";")[0].split(", ")) if found else set()


# last object -> provisioned figures (ms) and the metrics flagged lower bounds
CASES = {
    "no stuck object": (_object(COUNT - 1), _survivors(COUNT), set()),
    "one stuck of 20": (_stuck(COUNT - 1), [*_survivors(COUNT - 1), GIVEN_UP_S * 1000],
                        {f"{p}_{s}_ms" for p in ("provisioned", "bound") for s in ("p95", "p99", "max", "avg")}),
    "a 409 on create": (_conflict(COUNT - 1), _survivors(COUNT - 1), set()),
}


@pytest.mark.parametrize("case", CASES)
def test_given_up_objects_count_in_the_tail_as_lower_bounds(case: str) -> None:
    last, provisioned, flagged = CASES[case]
    parsed = parser.parse(_timeline(last), "volume-churn")
    values = parsed.values()
    for label, q in parser.PERCENTILES:
        want = parser.percentile(sorted(provisioned), q)
        assert values[f"provisioned_{label}_ms"] == pytest.approx(want), (label, values)
    assert _lower_bound_metrics(parsed.flags) == flagged, parsed.flags
    # the survivors' figures of a phase no object was stuck in stay exact, and p50 is unmoved by the stuck time
    assert not {m for m in _lower_bound_metrics(parsed.flags) if m.startswith(("accepted", "deleted", "pv_"))}
    if case == "one stuck of 20":
        assert values["provisioned_max_ms"] == pytest.approx(GIVEN_UP_S * 1000)
        assert values["provisioned_p99_ms"] > 4000 and values["provisioned_p95_ms"] > 300  # were 118.8 and 118.1
        assert values["provisioned_p50_ms"] < 120  # among the survivors': the stuck time does not reach it
        assert values["objects_ok"] == COUNT - 1


def test_a_bound_below_the_median_makes_the_median_a_lower_bound_too() -> None:
    """Given up early (1 ms into its phase): its true time may lie above any figure, p50 included."""
    obj = _stuck(COUNT - 1)
    obj["t"]["given_up"] = obj["t"]["request_sent"] + 0.001
    flags = _lower_bound_metrics(parser.parse(_timeline(obj), "volume-churn").flags)
    assert {"provisioned_p50_ms", "provisioned_max_ms", "bound_p50_ms"} <= flags, flags


def test_a_stuck_claim_of_a_real_run_is_a_lower_bound_in_the_stored_result_and_report(
        kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="simulated")
    stick(sim, monkeypatch, *NEVER_BOUND, numbers={3})
    tl = run_cp(spec("volume-churn", count=12, concurrency=4, timeout=20.0), kube=sim)
    given_up = tl.objects[next(n for n in tl.objects if n.endswith("-0003"))].t["given_up"]
    assert given_up >= 10.0  # the give-up floor
    run = events.RunSpec(run_id="lb-1", campaign="lb", node="node-1", env="kubernetes", test="volume-churn",
                         params={"count": 12}, sequence=0)
    started = datetime(2026, 12, 1, 2, tzinfo=UTC)
    log = events.RawLog(run=run, stdout=tl.jsonl(), exit_code=0, started_at=started,
                        ended_at=started + timedelta(seconds=15))
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch([events.raw_log(log, "podtax/runner"), derive(log)])
    flags, = store.con.execute("SELECT flags FROM runs WHERE run_id = 'lb-1'").fetchone()
    assert any(f.startswith("LOWER_BOUND: ") and "bound_p99_ms" in f for f in flags), flags
    value, = store.con.execute("SELECT value FROM metrics WHERE run_id = 'lb-1' AND name = 'bound_max_ms'").fetchone()
    assert value >= 10_000.0  # the given-up time, not the survivors' ~10 ms
    with serve(create_app(store)) as url:
        cells = json_cells("report", "lb", "--api", url)
        table = cli_output("report", "lb", "--all-metrics", "--api", url)
        cli_output("report", "lb", "--html", str(tmp_path / "lb.html"), "--api", url)
        rows = httpx.get(f"{url}/api/campaigns/lb/phase-table").json()["rows"]
    store.close()
    for metric in ("bound_p99_ms", "bound_max_ms", "provisioned_max_ms"):
        assert "LOWER_BOUND" in cells[metric]["flags"], (metric, cells[metric]["flags"])
        assert cells[metric]["host_lower_bound"] and not cells[metric]["pod_lower_bound"], cells[metric]
        assert "at least" in cells[metric]["flag_details"]["LOWER_BOUND"]
    assert "LOWER_BOUND" not in cells["bound_p50_ms"]["flags"] and not cells["bound_p50_ms"]["host_lower_bound"]
    assert f"≥ {cells['bound_max_ms']['host_median']:,.0f}" in table, table
    assert (tmp_path / "lb.html").read_text().count("≥ ") >= 3  # the full table: bound_p99, bound_max, provisioned_max
    # the phase table's pooled row (every object of every run) counts the stuck claim too, as a lower bound
    pooled = next(r["pooled"]["kubernetes"] for r in rows if r["phase"] == "bound" and r["statistic"] == "objects")
    assert pooled["objects"] == 12 and pooled["p99_lower_bound"] and not pooled["p50_lower_bound"], pooled
    assert pooled["p99_ms"] > 5_000, pooled  # was the survivors' ~10 ms
    assert f"12 · {pooled['p50_ms']:,.4g} · ≥ {pooled['p99_ms']:,.0f}" in table, table
