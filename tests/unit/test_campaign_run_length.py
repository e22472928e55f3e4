"""A campaign whose runs last as long as its timeout or longer (fio's runtime allowed up to 3600 s, the timeout 600
s by default) had every run killed, nothing checking one against the other (review r3, M3). Now refused when read,
in one line naming the test, its parameter and the timeout and the fix; a run another bound may end sooner (stress-ng
ops, sysbench events) is not, and a campaign stored before the check still loads. The timeout must also hold the
run's start-up (review r10, M1: runtime 599 under 600 s was accepted, but the Job's activeDeadlineSeconds counts
scheduling, image pull, container start and fio's file lay-out): at least max(30 s, 10% of the timeout)."""

from __future__ import annotations

import pytest
from podtax import campaign


def _text(test: str, params: str, extra: str = "") -> str:
    return f"name: c\nnodes: [n]\ntests:\n  - test: {test}\n    {params}\n{extra}"


REFUSED = [  # test, its params (or matrix), the campaign's other lines, the parameter and seconds named
    ("fio", "params: {runtime: 900}", "", "runtime=900 s", "600 s"),
    ("fio", "params: {runtime: 600}", "", "runtime=600 s", "600 s"),
    ("fio", "params: {runtime: 599}", "", "runtime=599 s", "600 s"),  # 1 s left for start-up
    ("fio", "params: {runtime: 540}", "", "runtime=540 s", "600 s"),  # 60 s left: 10% of 600, not more
    ("iperf3", "params: {duration: 10}", "timeout: 40\n", "duration=10 s", "40 s"),  # 30 s left, not more
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
    assert "must also hold the run's start-up" in said and "the larger of 30 s and 10% of the timeout" in said, said
    assert "raise the campaign's timeout to" in said, said
    # a timeout of 30 s or less holds only its start-up: no length fits it, so lowering is no fix
    assert (", or lower the test's" in said) == (float(timeout.split()[0]) > 30), said


def test_the_refusal_names_the_slack_and_both_fixes() -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(_text("fio", "params: {runtime: 599}"), "c.yaml")
    said = str(info.value)
    assert "at least 60 s (the larger of 30 s and 10% of the timeout)" in said, said
    assert said.endswith("raise the campaign's timeout to 666 s or more, or lower the test's runtime to at most "
                         "539 s"), said
    for fixed in ("params: {runtime: 539}", "params: {runtime: 599}\ntimeout: 666"):  # each fix is accepted
        assert campaign.parse(_text("fio", fixed), "c.yaml").tests[0].test == "fio"


def test_no_timeout_above_the_cap_is_offered() -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(_text("stress-ng-cpu", "params: {timeout: 80000}", "timeout: 86400\n"), "c.yaml")
    said = str(info.value)
    assert "raise" not in said and said.endswith("lower the test's timeout to at most 77759 s"), said


@pytest.mark.parametrize(("test", "params", "extra"), [
    ("fio", "params: {runtime: 539}", ""), ("fio", "params: {runtime: 900}", "timeout: 1001\n"),
    ("iperf3", "params: {duration: 10}", "timeout: 41\n"), ("fio", "params: {runtime: 10}", ""),
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
