"""A campaign whose runs last as long as its timeout or longer (fio's runtime allowed up to 3600 s, the timeout 600
s by default) had every run killed, nothing checking one against the other (review r3, M3). Now refused when read,
in one line naming the test, its parameter and the timeout and the fix; a run another bound may end sooner (stress-ng
ops, sysbench events) is not, and a campaign stored before the check still loads."""

from __future__ import annotations

import pytest
from podtax import campaign


def _text(test: str, params: str, extra: str = "") -> str:
    return f"name: c\nnodes: [n]\ntests:\n  - test: {test}\n    {params}\n{extra}"


REFUSED = [  # test, its params (or matrix), the campaign's other lines, the parameter and seconds named
    ("fio", "params: {runtime: 900}", "", "runtime=900 s", "600 s"),
    ("fio", "params: {runtime: 600}", "", "runtime=600 s", "600 s"),
    ("fio", "matrix: {runtime: [10, 120]}", "timeout: 100\n", "runtime=120 s", "100 s"),
    ("stress-ng-cpu", "params: {timeout: 700}", "timeout: 650\n", "timeout=700 s", "650 s"),
    ("sysbench-cpu", "params: {events: 0, time: 900}", "", "time=900 s", "600 s"),
    ("iperf3", "params: {duration: 3600}", "", "duration=3600 s", "600 s"),
    ("sockperf", "params: {duration: 60}", "timeout: 30\n", "duration=60 s", "30 s"),
]


@pytest.mark.parametrize(("test", "params", "extra", "length", "timeout"), REFUSED)
def test_a_run_as_long_as_the_timeout_is_refused(test: str, params: str, extra: str, length: str,
                                                 timeout: str) -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(_text(test, params, extra), "c.yaml")
    said = str(info.value)
    assert len(said.splitlines()) == 1 and said.startswith("c.yaml:4: tests.0: "), said
    assert f"{test} runs {length}, but the campaign's timeout ({timeout})" in said, said
    assert "raise the campaign's timeout above" in said and "or lower the test's" in said, said


@pytest.mark.parametrize(("test", "params", "extra"), [
    ("fio", "params: {runtime: 599}", ""), ("fio", "params: {runtime: 900}", "timeout: 1000\n"),
    ("stress-ng-cpu", "params: {timeout: 700, ops: 1000}", ""),  # ends at its ops, maybe sooner
    ("sysbench-cpu", "params: {events: 10000, time: 900}", ""), ("sysbench-memory", "params: {time: 900}", "")])
def test_a_run_that_may_end_sooner_is_accepted(test: str, params: str, extra: str) -> None:
    assert campaign.parse(_text(test, params, extra), "c.yaml").tests[0].test == test


def test_a_campaign_stored_before_the_check_still_loads() -> None:
    spec = campaign.parse(_text("fio", "params: {runtime: 10}"), "c.yaml").model_dump()
    spec["tests"][0]["params"]["runtime"] = 900
    assert campaign.Campaign.model_validate(spec, context=campaign.STORED).tests[0].params["runtime"] == 900
    with pytest.raises(ValueError, match="runtime=900 s"):
        campaign.Campaign.model_validate(spec)
