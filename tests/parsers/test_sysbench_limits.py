"""A sysbench log that did more than its requested limits allow is another run's log: sysbench stops at
`--events` exactly, and overshoots `--time` by at most its longest event and the threads' start and stop.
Such a run is flagged PARAM_MISMATCH (the cell's PARAMS_MISMATCH), as a wrong thread count is.

The log ran `--time=2` with no event limit: 3342 events in 2.0005 s, latency max 0.80 ms."""

from __future__ import annotations

import pytest
from podtax.parsers import parse_run

from tests.parsers.corpus_index import CORPUS, read_text

LOG = read_text(CORPUS / "debian12-x86_64" / "sysbench-cpu-default-time.log")


@pytest.mark.parametrize(("events", "time", "want"), [
    (2000, 30, ["PARAM_MISMATCH: events: sysbench ran 3342 events, more than the 2000 requested"]),  # the audit's row
    (3341, 2, ["PARAM_MISMATCH: events: sysbench ran 3342 events, more than the 3341 requested"]),
    (0, 1, ["PARAM_MISMATCH: time: sysbench ran 2.0005 s, longer than the 1 s requested"]),
    (3342, 2, []),  # exactly the requested events
    (0, 2, []),  # what it ran
    (10000, 2, ["SHORT: sysbench ran 3342 of the 10000 requested events before its 2 s time limit"]),
    (None, None, []),  # nothing requested: nothing to compare
], ids=["events-2000-time-30", "one-event-more", "time-1", "events-3342", "time-2", "short", "unknown"])
def test_a_run_beyond_its_requested_limits_is_flagged(events: int | None, time: int | None, want: list[str]) -> None:
    requested = {"threads": 1, "max_prime": 20000}
    requested |= {"events": events, "time": time} if events is not None else {}
    parsed = parse_run("sysbench-cpu", LOG, requested=requested)
    assert list(parsed.flags) == want
    assert parsed.values()["events"] == 3342  # the figures stay: the flag says whose run they are
