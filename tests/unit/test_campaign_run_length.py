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


REFUSED = [  # a run as long as its timeout or longer: killed every time
    ("fio", "params: {runtime: 900}", "", "runtime=900 s", "600 s"),
    ("fio", "params: {runtime: 600}", "", "runtime=600 s", "600 s"),
    ("fio", "matrix: {runtime: [10, 120]}", "timeout: 100\n", "runtime=120 s", "100 s"),
    ("stress-ng-cpu", "params: {timeout: 700}", "timeout: 650\n", "timeout=700 s", "650 s"),
    ("sysbench-cpu", "params: {events: 0, time: 900}", "", "time=900 s", "600 s"),
    ("iperf3", "params: {duration: 3600}", "", "duration=3600 s", "600 s"),
    ("sockperf", "params: {duration: 60}", "timeout: 30\n", "duration=60 s", "30 s"),
]
WARNED = [  # shorter than the timeout, but less than the start-up slack left: killed on a slow start only
    ("fio", "params: {runtime: 599}", "", "runtime=599 s", "600 s"),  # 1 s left for start-up
    ("fio", "params: {runtime: 540}", "", "runtime=540 s", "600 s"),  # 60 s left: 10% of 600, not more
    ("iperf3", "params: {duration: 10}", "timeout: 40\n", "duration=10 s", "40 s"),  # 30 s left, not more
    ("sysbench-cpu", "params: {events: 0, time: 5}", "timeout: 30\n", "time=5 s", "30 s"),
]


def _said(test: str, said: str, length: str, timeout: str) -> None:
    assert len(said.splitlines()) == 1, said
    assert f"{test} runs {length}, but the campaign's timeout ({timeout})" in said, said
    assert "must also hold the run's start-up" in said and "the larger of 30 s and 10% of the timeout" in said, said
    assert "raise the campaign's timeout to" in said, said
    # a timeout of 30 s or less holds only its start-up: no length fits it, so lowering is no fix
    assert (", or lower the test's" in said) == (float(timeout.split()[0]) > 30), said


@pytest.mark.parametrize(("test", "params", "extra", "length", "timeout"), REFUSED)
def test_a_run_as_long_as_the_timeout_is_refused(test: str, params: str, extra: str, length: str,
                                                 timeout: str) -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(_text(test, params, extra), "c.yaml")
    said = str(info.value)
    assert said.startswith("c.yaml:4: tests.0: ") and "its runs would be killed before they end" in said, said
    _said(test, said, length, timeout)


@pytest.mark.parametrize(("test", "params", "extra", "length", "timeout"), WARNED)
def test_a_run_that_leaves_no_room_for_start_up_is_warned_of(test: str, params: str, extra: str, length: str,
                                                             timeout: str) -> None:
    """Refusing these (review r10, M1) also refused short test campaigns that run fine on a host (a 5 s run under a
    30 s timeout): they are accepted, and `campaign submit` prints the warning."""
    c = campaign.parse(_text(test, params, extra), "c.yaml")
    said = [w for w in campaign.warnings(c) if w.startswith("tests.0: ")]
    assert len(said) == 1 and "on a slow start its runs may be killed before they end" in said[0], said
    _said(test, said[0], length, timeout)


def test_the_warning_names_the_slack_and_both_fixes() -> None:
    said = campaign.warnings(campaign.parse(_text("fio", "params: {runtime: 599}"), "c.yaml"))[0]
    # it warns when the run leaves exactly 60 s (fits needs more): "at least 60 s" said otherwise (review r11)
    assert "more than 60 s (the larger of 30 s and 10% of the timeout)" in said, said
    assert said.endswith("raise the campaign's timeout to 666 s or more, or lower the test's runtime to at most "
                         "539 s"), said
    for fixed in ("params: {runtime: 539}", "params: {runtime: 599}\ntimeout: 666"):  # each fix: no warning
        assert not [w for w in campaign.warnings(campaign.parse(_text("fio", fixed), "c.yaml")) if "runtime" in w]


def test_no_timeout_above_the_cap_is_offered() -> None:
    c = campaign.parse(_text("stress-ng-cpu", "params: {timeout: 80000}", "timeout: 86400\n"), "c.yaml")
    said = campaign.warnings(c)[0]
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
