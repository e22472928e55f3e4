"""The runner and the analyzer decide alike whether a report is of another submission of its campaign
(RunSpec.of_another_submission, events.same_submission). They each had their own rule: the runner compared the stamps
as given (!=), the analyzer in UTC with a time without timezone read as UTC (events.decode accepts one). With the
campaign's submission of such a time, a report echoing the same instant with its zone was left out by the runner as an
earlier submission's (the run never measured in its eyes) while the analyzer stored it. Real CampaignState, real
DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from podtax import events
from podtax.campaign import Campaign
from podtax_analyzer.store import Store
from podtax_runner.state import CampaignState

from tests.analysis.test_store_submissions import result, submitted

SPEC = {"name": "c", "nodes": ["n1"], "environments": ["host"], "seed": 7,
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1}}], "repetitions": {"min": 1, "max": 1}}
AT = datetime(2026, 1, 2, 3, 4, 5, 678901)  # without timezone: read as UTC
STAMPS = {  # a report's stamp against a campaign submitted at AT (naive), and whether it is that submission
    "same naive": (AT, True),
    "same instant, UTC": (AT.replace(tzinfo=UTC), True),
    "same instant, -07:00": (AT.replace(tzinfo=UTC).astimezone(timezone(timedelta(hours=-7))), True),
    "5 min before": (AT.replace(tzinfo=UTC) - timedelta(minutes=5), False),
    "unstamped": (None, True),
}


@pytest.mark.parametrize("name", STAMPS)
def test_the_runner_and_the_analyzer_agree(name: str, tmp_path: Path) -> None:
    stamp, same = STAMPS[name]
    state = CampaignState.new(Campaign.model_validate(SPEC), {"n1": 1}, "local", 7, events.now(), AT)
    run = state.next_for("n1", events.now())
    assert run is not None
    echo = run.model_copy(update={"submitted": stamp})
    runner_takes = not state.of_another_submission(echo)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(AT), result("c-1", stamp)])
        with store.cursor() as con:
            analyzer_takes = con.execute("SELECT count(*) FROM runs WHERE run_id = 'c-1'").fetchone()[0] == 1
    finally:
        store.close()
    assert (runner_takes, analyzer_takes) == (same, same)
    assert events.same_submission(AT, stamp) is same
