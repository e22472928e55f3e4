"""What a message on the bus may carry, found by an audit of hostile input (Dec 3): names that become
subjects, keys, files and HTML are bounded and plain; hdparm opens only block devices; sockperf's server
is an address, nothing more; an event is read only from the subject its type and content give."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import events, templates
from podtax_host_agent.execute import device_problem
from pydantic import ValidationError

from tests.integration.harness import host_facts

RUN = {"run_id": "c-0123abcd", "campaign": "c", "node": "vm", "env": "host", "test": "sysbench-cpu", "params": {}}


@pytest.mark.parametrize("field,value", [
    ("run_id", "x" * 600_000),  # made the root agent's log exceed NATS's limit: re-run on every redelivery
    ("run_id", "a/../b"),
    ("campaign", "../../etc/passwd"),
    ("campaign", "ok\u202eevil"),  # a right-to-left override
    ("campaign", "Upper"),
    ("node", "a b"),
    ("node", "n" * 254),
    ("cluster", "c\nd"),
])
def test_run_names_on_the_bus_are_bounded_and_plain(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match=field):
        events.RunSpec(**{**RUN, field: value})


@pytest.mark.parametrize("field,value", [("run_id", "import-0123456789abcdef01234567"), ("run_id", "c-1f-a2"),
                                         ("node", "worker-3.example.com"), ("node", "Node_7"),
                                         ("campaign", "quick"), ("cluster", "lab-2")])
def test_the_names_podtax_makes_still_pass(field: str, value: str) -> None:
    assert getattr(events.RunSpec(**{**RUN, field: value}), field) == value


def _hdparm(device: str) -> events.RunSpec:
    return events.RunSpec(**{**RUN, "test": "hdparm", "params": {"mode": "cached", "device": device}})


def _a_block_device() -> str:
    for name in sorted(p.name for p in Path("/sys/block").iterdir()):
        if Path("/dev", name).exists():
            return f"/dev/{name}"
    raise AssertionError("no block device on this machine to check the accepted case")


@pytest.mark.parametrize("device,problem", [
    ("/dev/null", "is not a block device"),  # a character device: /dev/watchdog is one too
    ("/dev/no-such-disk", "cannot be opened"),
])
def test_hdparm_opens_only_block_devices(device: str, problem: str) -> None:
    assert problem in (device_problem(_hdparm(device)) or "")


def test_hdparm_accepts_a_block_device_and_other_tests_are_not_checked() -> None:
    assert device_problem(_hdparm(_a_block_device())) is None
    assert device_problem(events.RunSpec(**RUN)) is None


@pytest.mark.parametrize("server", ["fe80::1%--help", "fe80::1%eth0", "::1%" + "x" * 1000, "localhost"])
def test_sockperf_server_is_an_address_only(server: str) -> None:
    with pytest.raises(ValidationError, match="without a scope"):
        templates.Sockperf(server=server)


def test_an_event_belongs_on_its_own_subject() -> None:
    facts = host_facts(1)
    assert events.misplaced(facts, "podtax.host.facts.n1") is None
    assert "belongs on podtax.host.facts.n1" in (events.misplaced(facts, "podtax.host.facts.n2") or "")
    assert "not on podtax.run.log.host.vm" in (events.misplaced(facts, "podtax.run.log.host.vm") or "")
