"""A spooled report's file name (spool.file_name: `held.<campaign>.<run id>.<digest>.json`) must fit in NAME_MAX (255
bytes). A campaign of 50 characters and a run id of 200 made 262: Spool.write failed with ENAMETOOLONG, and the
runner held the report in memory only (outbox._keep catches the OSError: a restart ran the run again). Now such a run
id is cut as measured/ names cut theirs (spool.cut_run_id), and the next runner still finds the copy (kept.sorted_out),
as it finds one an older runner wrote under a name that fitted. Real spool folder, real campaign state."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from podtax import campaign, events
from podtax_runner import kept, outbox, spool
from podtax_runner.documents import RunState
from podtax_runner.state import CampaignState

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CAMPAIGN = "c" * 50  # the longest campaign name (campaign.NAME_PATTERN)


def state_with(run_id: str) -> tuple[CampaignState, events.RunSpec]:
    """A campaign of CAMPAIGN whose one run (id `run_id`) is dispatched, and that run."""
    c = campaign.Campaign.model_validate({
        "name": CAMPAIGN, "nodes": ["n1"], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 1, "max": 1}, "timeout": 30, "seed": 1})
    planned = CampaignState.new(c, {"n1": 4}, "local", 1, T0)
    [first] = planned.runs.values()
    run = first.run.model_copy(update={"run_id": run_id})
    return CampaignState(planned.header, [RunState(run=run, status="dispatched")]), run


def a_log(run: events.RunSpec) -> events.RawLogV1:
    now = events.now()
    raw = events.RawLog(run=run, stdout="x", exit_code=0, started_at=now, ended_at=now, tool_version="1.0.20",
                        provenance=events.Provenance(image="bench:1"))
    return events.raw_log(raw, "test")


def found(box: spool.Spool, state: CampaignState) -> list[str]:
    """The run ids a starting runner sends from the spool (kept.copies: each file sorted out alone)."""
    out = []
    for key, path in box.entries():
        send, _ = kept.sorted_out([(key, path.read_bytes())], {state.name: state})
        out += list(send)
    return out


def test_a_long_run_id_is_spooled_and_found_again(tmp_path: Path) -> None:
    state, run = state_with(f"{CAMPAIGN}-" + "r" * 149)  # 200 characters
    submitted = state.created_at.isoformat()
    box = spool.Spool(tmp_path)
    path = box.write(run, submitted, outbox.kept_value(a_log(run), submitted))  # before: OSError ENAMETOOLONG
    assert len(path.name.encode()) <= spool.NAME_MAX and "~" in path.name, path.name
    assert found(box, state) == [run.run_id]
    _, other = state_with(f"{CAMPAIGN}-" + "r" * 148 + "s")  # the same first characters: another name
    assert spool.file_name(other, submitted) != path.name
    box.remove(run, "")  # of any submission
    assert box.entries() == []
    box.write(run, submitted, outbox.kept_value(a_log(run), submitted))
    box.remove(run, submitted)
    assert box.entries() == []


def test_a_name_that_fits_is_as_before_and_still_found(tmp_path: Path) -> None:
    state, run = state_with("r" * 170)  # over measured/'s 160, but its name fits: an older runner wrote it so
    submitted = state.created_at.isoformat()
    older = f"{outbox.kept_key(run)}.{spool.submission_digest(submitted)}{spool.SUFFIX}"
    assert spool.file_name(run, submitted) == older
    (tmp_path / older).write_bytes(outbox.kept_value(a_log(run), submitted))
    box = spool.Spool(tmp_path)
    assert found(box, state) == [run.run_id]
    box.remove(run, submitted)
    assert box.entries() == []


def test_a_cut_key_of_another_run_is_not_taken_for_it(tmp_path: Path) -> None:
    state, run = state_with(f"{CAMPAIGN}-" + "r" * 149)
    _, other = state_with(f"{CAMPAIGN}-" + "r" * 148 + "s")
    submitted = state.created_at.isoformat()
    (tmp_path / spool.file_name(run, submitted)).write_bytes(outbox.kept_value(a_log(other), submitted))
    assert found(spool.Spool(tmp_path), state) == []
