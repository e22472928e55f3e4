"""A few volumes far slower than the rest in every run (a stuck provisioner's retries): planted on Nomad's
side, 3 of 100 volumes a run took 5 s more to provision where the rest took ~0.15 s (Kubernetes' ~0.21 s). Every
run's makespan, max and p99 rest on those 3, so podtax said "nomad 1219.9% slower" for the provisioned makespan (the
test's headline) and "slower" for the p99, with no flag: a reader took every Nomad volume for 13 times slower, while
97% of them provisioned faster than Kubernetes' (p50 ratio 0.72, verdict faster). Now each cell of that phase
carries SLOW_OBJECTS, naming how many of how many objects in how many runs, and whether its figure rests on them.
Real parser, real DuckDB file, real app."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.derive import derive
from podtax_analyzer.api import create_app
from podtax_analyzer.celldata_failures import SlowObjects, beyond_spread
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.phase_table import phase_table
from podtax_analyzer.store import Store
from timeline_synth import run_events

RUNS, COUNT, SLOW = 6, 100, (3, 40, 77)
Edit = Callable[[list[dict]], None]


def _slowed(which: tuple[int, ...]) -> Edit:
    """Objects ``which`` provisioned 5 s later (every later end point shifted alike)."""
    def edit(lines: list[dict]) -> None:
        for obj in lines[1:-1]:
            if int(obj["name"][-4:]) in which:
                obj["t"] = {k: v if k == "request_sent" else v + 5.0 for k, v in obj["t"].items()}
    return edit


def _seen_late(lines: list[dict]) -> None:
    """A claim watch down from 1 s to 6 s: 3 claims seen bound, their PVs created, only by the re-list at 6 s
    (upper bounds)."""
    late = {}
    for obj in lines[1:4]:
        obj["t"].update(pv_created=6.0, bound=6.05, delete_requested=7.0, gone=7.05, pv_gone=7.15)
        late[obj["name"]] = ["pv_created", "bound"]
    lines[-1]["watch_gaps"] = [{"watch": "claim", "start": 1.0, "end": 6.0, "late": late}]


def _redrawn(draw: Callable[[np.random.Generator], float], end: str, seed: int, poll_s: float = 0.0) -> Edit:
    """Each object's time to ``end`` drawn again (later end points moved alike, earlier ones kept under it); with
    ``poll_s``, seen at the next poll: up to that much later (a poll grid unaligned with the creates)."""
    def edit(lines: list[dict]) -> None:
        rng = np.random.default_rng([seed, int(lines[1]["name"].split("-")[-2])])
        for obj in lines[1:-1]:
            t = obj["t"]
            took = draw(rng) + poll_s * float(rng.random())
            keys = list(t)
            move = t["request_sent"] + took - t[end]
            for k in keys[keys.index(end):]:
                t[k] = round(t[k] + move, 6)
            for k in keys[1:keys.index(end)]:
                t[k] = min(t[k], t[end])
    return edit


def _lognormal(median: float, sigma: float, floor: float = 0.0) -> Callable[[np.random.Generator], float]:
    return lambda rng: floor + median * float(rng.lognormal(0.0, sigma))


def _pareto(alpha: float) -> Callable[[np.random.Generator], float]:
    return lambda rng: 0.1 * (1.0 + float(rng.pareto(alpha)))


def _edited(raw: events.RawLogV1, edit: Edit) -> list[events.Envelope]:
    """The run's raw log edited, and the parser's outcome of it."""
    log = events.RawLog.model_validate(raw.data)
    lines = [json.loads(x) for x in log.stdout.splitlines()]
    edit(lines)
    log = log.model_copy(update={"stdout": "\n".join(json.dumps(x) for x in lines) + "\n"})
    return [events.raw_log(log, "podtax/runner"), derive(log)]


# name -> (runs a side, objects a run, lognormal sigma of each step, {env: edit}, runs edited)
CASES: dict[str, tuple[int, int, float, dict[str, Edit], int]] = {
    "slow": (RUNS, COUNT, 0.2, {"nomad": _slowed(SLOW)}, RUNS),
    "none": (RUNS, COUNT, 0.2, {}, RUNS),
    "one of 100": (RUNS, COUNT, 0.2, {"nomad": _slowed((40,))}, RUNS),
    "one of 20": (RUNS, 20, 0.2, {"nomad": _slowed((7,))}, RUNS),
    "in 1 of 10 runs": (10, COUNT, 0.2, {"nomad": _slowed(SLOW)}, 1),
    "in 5 of 10 runs": (10, COUNT, 0.2, {"nomad": _slowed((40,))}, 5),
    "sigma 0.7": (10, 400, 0.7, {}, 10),
    "sigma 1.0": (10, COUNT, 1.0, {}, 10),
    "sigma 0.5": (10, COUNT, 0.5, {}, 10),
    "sigma 1.5": (10, COUNT, 1.5, {}, 10),
    "sigma 1.5, 5 runs": (5, COUNT, 1.5, {}, 5),
    "1 of 100 at sigma 0.7": (10, COUNT, 0.7, {"nomad": _slowed((40,))}, 10),
    "2 of 100 at sigma 0.7": (10, COUNT, 0.7, {"nomad": _slowed((3, 77))}, 10),
    "2 of 100 at sigma 1.0": (10, COUNT, 1.0, {"nomad": _slowed((3, 77))}, 10),
    "2 of 100 at sigma 1.0, 5 runs": (5, COUNT, 1.0, {"nomad": _slowed((3, 77))}, 5),
    "seen late": (RUNS, COUNT, 0.2, {"kubernetes": _seen_late}, RUNS),
    # review r7: nothing stuck, not lognormal (seeds at which 25744a57's beyond_spread flagged them)
    "polled every 1 s, sigma 1.5": (10, COUNT, 0.2, {"kubernetes": _redrawn(_lognormal(0.2, 1.5), "pv_created", 0,
                                                                            poll_s=1.0)}, 10),
    "0.3 s floor + sigma 1.5": (10, COUNT, 0.2, {"nomad": _redrawn(_lognormal(0.1, 1.5, 0.3), "api_accepted", 0)}, 10),
    "Pareto alpha 1.5": (10, COUNT, 0.2, {"nomad": _redrawn(_pareto(1.5), "api_accepted", 0)}, 10),
    "Pareto alpha 2": (10, COUNT, 0.2, {"nomad": _redrawn(_pareto(2.0), "api_accepted", 0)}, 10),
}
PARAMS = {"polled every 1 s, sigma 1.5": {"observe": "poll", "poll_interval_s": 1.0}}  # more of a case's run params


def _store(path: Path, case: str) -> Store:
    runs, count, sigma, edits, edited = CASES[case]
    s = Store(path)
    batch = []
    for seq in range(runs):
        for k, env in enumerate(("kubernetes", "nomad")):
            raw, result = run_events("cp", env, "volume-churn", 2 * seq + k, count=count, sigma=sigma,
                                     params=PARAMS.get(case))
            batch += _edited(raw, edits[env]) if env in edits and seq < edited else [raw, result]
    s.write_batch(batch)
    return s


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    made: dict[str, Store] = {}

    def get(case: str) -> Store:
        if case not in made:
            made[case] = _store(tmp_path_factory.mktemp("db") / "podtax.duckdb", case)
        return made[case]
    yield get
    for s in made.values():
        s.close()


def _cells(store):
    return {c.metric: c for c in compare_campaign(store.cursor(), "cp").cells}


def test_a_few_slow_volumes_in_every_run_are_flagged_where_they_set_the_figure(stores):
    cells = _cells(stores("slow"))
    makespan, p99, p50 = (cells[f"provisioned_{m}"] for m in ("makespan_s", "p99_ms", "p50_ms"))
    assert makespan.verdict == "slower" and makespan.ratio > 10  # true of the makespan: it waits for the slowest
    head = "Slow objects: 18 of 600 nomad objects (3.0%), in 6 of its 6 runs, took over 10x the nomad median"
    for c in (makespan, p99, cells["provisioned_max_ms"], cells["provisioned_avg_ms"]):
        assert "SLOW_OBJECTS" in c.flags, c.metric
        assert c.flag_details["SLOW_OBJECTS"].startswith(head)
        assert "rests on them: it describes those few, not the typical object" in c.flag_details["SLOW_OBJECTS"]
    for c in (p50, cells["provisioned_p95_ms"]):  # 3% slow: the p95 and p50 are of the other objects
        assert "leaves them out" in c.flag_details["SLOW_OBJECTS"]
    assert p50.verdict == "faster" and p50.ratio < 0.8  # the typical Nomad volume: 0.15 s against 0.21 s
    # Kubernetes' side had none, and other phases none either
    assert "kubernetes objects" not in makespan.flag_details["SLOW_OBJECTS"]
    assert not any("SLOW_OBJECTS" in c.flags for m, c in cells.items() if not m.startswith("provisioned"))


def test_the_flag_reaches_the_phase_table_the_report_and_the_exports(stores):
    store = stores("slow")
    rows = [r for r in phase_table(compare_campaign(store.cursor(), "cp")).rows if r.phase == "provisioned"]
    assert rows and all("SLOW_OBJECTS" in r.flags for r in rows if r.cell)
    client = TestClient(create_app(store))
    html = client.get("/report/cp").text
    assert "SLOW_OBJECTS" in html and "18 of 600 nomad objects" in html
    book = client.get("/api/campaigns/cp/export.zip").content
    with zipfile.ZipFile(io.BytesIO(book)) as z:
        text = "".join(z.read(n).decode() for n in z.namelist() if "comparison" in n)
    assert "SLOW_OBJECTS" in text


def test_no_slow_volume_no_flag(stores):
    cells = _cells(stores("none"))
    assert not any("SLOW_OBJECTS" in c.flags for c in cells.values())


@pytest.mark.parametrize(("case", "tail", "typical"), [("one of 100", "provisioned_p99_ms", "provisioned_p95_ms"),
                                                       ("one of 20", "provisioned_p95_ms", "provisioned_p50_ms")])
def test_one_slow_object_a_run_sets_the_percentile_that_interpolates_to_it(stores, case, tail, typical):
    """The parser's percentiles interpolate between order statistics: with 1 slow object of 100 a run the p99
    (rank 98.01 of 0..99) takes 1% of its value, 1 of 20 the p95 (18.05 of 0..19): they rest on it; at exactly
    1 - p the flag used to say the p99 'leaves them out' while it read 1.285x (r3's probe)."""
    cells = _cells(stores(case))
    assert "rests on them: it describes those few" in cells[tail].flag_details["SLOW_OBJECTS"], tail
    assert "leaves them out" in cells[typical].flag_details["SLOW_OBJECTS"], typical


def test_slow_objects_in_a_minority_of_runs_are_not_flagged(stores):
    """3 slow volumes in 1 of 10 nomad runs: the cell's max, makespan and p99 are medians over runs, which that
    one run does not set (a tail in some runs is BIMODAL's): no SLOW_OBJECTS."""
    cells = _cells(stores("in 1 of 10 runs"))
    assert not any("SLOW_OBJECTS" in c.flags for c in cells.values())


def test_slow_objects_in_exactly_half_the_runs_are_flagged(stores):
    """Review r7: 1 slow volume in 5 of 10 nomad runs: the median over runs averages a slow run with a normal one, so
    the max read 9.5x the other side's with no SLOW_OBJECTS ('half the runs or fewer set none of the figures')."""
    cells = _cells(stores("in 5 of 10 runs"))
    flagged = [m for m, c in cells.items() if "SLOW_OBJECTS" in c.flags]
    assert "provisioned_max_ms" in flagged and "provisioned_makespan_s" in flagged, flagged
    assert "rests on them" in cells["provisioned_max_ms"].flag_details["SLOW_OBJECTS"]


@pytest.mark.parametrize("case", ["sigma 0.5", "sigma 0.7", "sigma 1.0", "sigma 1.5", "sigma 1.5, 5 runs"])
def test_a_long_tail_with_nothing_planted_is_not_flagged(stores, case):
    """Every step lognormal with sigma 0.5 to 1.5, nothing slowed: a few objects a run pass 10x the median (at 1.5,
    6%), the end of a continuous tail that the side's own spread predicts, not a few stuck objects."""
    cells = _cells(stores(case))
    assert [m for m, c in cells.items() if "SLOW_OBJECTS" in c.flags] == []


@pytest.mark.parametrize(("case", "tail"), [("1 of 100 at sigma 0.7", "provisioned_p99_ms"),
                                            ("2 of 100 at sigma 0.7", "provisioned_p99_ms"),
                                            ("2 of 100 at sigma 1.0", "provisioned_max_ms"),
                                            ("2 of 100 at sigma 1.0, 5 runs", "provisioned_max_ms")])
def test_a_few_stuck_objects_in_a_wide_spread_are_flagged(stores, case, tail):
    """Review of the stand-apart rule: 1 or 2 nomad volumes of 100 a run 5 s late (~34x the 0.15 s median) where
    every step is lognormal with sigma 0.7 or 1.0 set the max and makespan, but were not flagged: the wide spread
    puts as many objects between 4x the median and them ('near') as over 10x. They are more objects over 10x (or
    20x, 30x, 50x) the median than the side's own spread predicts: flagged, on nomad's side only."""
    cells = _cells(stores(case))
    for m in ("provisioned_makespan_s", "provisioned_max_ms", tail):
        assert "SLOW_OBJECTS" in cells[m].flags, m
        said = cells[m].flag_details["SLOW_OBJECTS"]
        assert "nomad objects" in said and "kubernetes objects" not in said, said
        assert "rests on them" in said, said
    assert not any("SLOW_OBJECTS" in c.flags for m, c in cells.items() if not m.startswith("provisioned")), case


@pytest.mark.parametrize("case", ["polled every 1 s, sigma 1.5", "0.3 s floor + sigma 1.5", "Pareto alpha 1.5",
                                  "Pareto alpha 2"])
def test_a_wide_tail_not_lognormal_with_nothing_stuck_is_not_flagged(stores, case):
    """Review r7 of beyond_spread: a lognormal fitted from 0 to the median and 90th percentile predicts too few
    objects past 10x for a side polled every second (its end points up to 1 s late), a fixed 0.3 s under
    lognormal(0.1 s, sigma 1.5), or a Pareto tail: with nothing stuck, 111, 109, 141 and 67 of 200 campaigns were
    flagged. The fit is now of the times less 0.9 x the side's least, and not of a polled side: no flag."""
    cells = _cells(stores(case))
    assert [m for m, c in cells.items() if "SLOW_OBJECTS" in c.flags] == []


def test_a_side_without_spread_to_fit_predicts_no_alarm():
    """Review r7: with the 90th percentile at the median (most objects at one time, the rest spread over the tail)
    the fit's spread was 0, it predicted no object past 10x, and any there were an alarm. Such a side has no spread
    to fit: beyond_spread says nothing (the stand-apart test still decides)."""
    flat = SlowObjects(objects=1000, slow=5, runs=10, slow_runs=5, median_s=0.2, slowest_s=3.0, near=8, q90_s=0.2)
    assert not beyond_spread(flat)


def test_objects_seen_late_by_a_re_list_are_not_counted_slow(stores):
    """3 kubernetes claims a run whose PVs a re-list saw at 6 s after a dropped watch (WATCH_GAP: upper bounds, not
    slow volumes) are not slow objects."""
    cells = _cells(stores("seen late"))
    assert "WATCH_GAP" in cells["provisioned_makespan_s"].flags
    assert not any("SLOW_OBJECTS" in c.flags for c in cells.values())
