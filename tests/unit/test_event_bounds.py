"""Events refuse values no measurement can have: NaN/Infinity anywhere, times before 2000 or a day ahead."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from podtax import events
from pydantic import ValidationError


def score(**kw: object) -> dict:
    base = {"cluster": "local", "node": "n1", "env": "host", "test": "sysbench-cpu", "params_key": "threads=1",
            "metric": "events_per_second", "unit": "events/s", "higher_is_better": True, "median": 1.0,
            "mean": 1.0, "n": 3, "updated_at": events.now().isoformat()}
    return {**base, **kw}


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_node_score_refuses_non_finite_values_from_raw_json(bad: str) -> None:
    envelope = {"type": "podtax.score.updated.v1", "subject": "podtax.score.updated.host.n1", "data": score()}
    raw = json.dumps(envelope).replace('"median": 1.0', f'"median": {bad}')
    with pytest.raises(ValidationError, match="finite number"):
        events.decode(raw)


def test_metric_and_params_refuse_nan() -> None:
    with pytest.raises(ValidationError, match="value"):
        events.Metric(name="m", value=float("nan"), unit="u", higher_is_better=True)
    with pytest.raises(ValidationError):
        events.RunSpec(run_id="r", campaign="c", node="n", env="host", test="fio", params={"x": float("inf")})


@pytest.mark.parametrize("when", [datetime(1970, 1, 1, tzinfo=UTC), events.now() + timedelta(days=2),
                                  datetime(2999, 1, 1, tzinfo=UTC)])
def test_implausible_times_are_refused(when: datetime) -> None:
    with pytest.raises(ValidationError, match="plausible"):
        events.NodeScore(**{**score(), "updated_at": when})


def test_plausible_times_pass_also_without_timezone() -> None:
    assert events.NodeScore(**{**score(), "updated_at": datetime(2024, 3, 1, 12, 0)}).n == 3
    assert events.NodeScore(**{**score(), "updated_at": events.now() + timedelta(hours=1)}).n == 3
