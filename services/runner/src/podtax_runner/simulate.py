"""SIMULATED execution (PODTAX_RUNNER_SIMULATE=true), for tests and fault drills only.

No benchmark runs: each dispatched run gets, at once, a synthetic result published on the bus like a
real one (so the runner's outcome consumer, de-duplication and the analyzer see the usual traffic).
The result says what it is: tool `simulated`, parser `simulated`, flag SIMULATED.
"""

from __future__ import annotations

from podtax import events, templates

SOURCE = "podtax/runner/simulated"


def result(run: events.RunSpec) -> events.ResultV1:
    """The synthetic result of a run. Each call is a new event (a new id, as a real run's result would be),
    so a run sent twice shows up as two results: the fault drills count them as duplicates."""
    test = templates.get(run.test)
    metric = test.primary_metric(test.validate(run.params))
    now = events.now()
    value = 1000.0 if run.env == "host" else 970.0
    res = events.Result(run=run, tool="simulated", tool_version="simulated", parser_version="simulated",
                        metrics=[events.Metric(name=metric, value=value, unit="simulated", higher_is_better=True)],
                        flags=["SIMULATED"], started_at=now, ended_at=now)
    return events.result(res, SOURCE)
