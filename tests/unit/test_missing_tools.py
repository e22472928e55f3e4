"""Submit's refusal of host runs of a tool a node's host agent reports missing (podtax.cli.missing_tools, through
check_nodes): every test of the tool named, only the fixes that leave a campaign to run, and an agent older than
the iperf3/sockperf templates (it leaves them out of its facts even when installed) told apart where its facts
allow."""

from __future__ import annotations

from typing import Any

from podtax import campaign
from podtax.cli.campaign import check_nodes

SYSBENCH = """  - test: sysbench-cpu
    params: {threads: 1, max_prime: 2000, events: 100}
  - test: sysbench-memory
    params: {threads: 1}
"""
NET = """  - test: iperf3
    params: {duration: 5, protocol: tcp, parallel: 1}
"""


def _campaign(nodes: str, envs: str, tests: str) -> campaign.Campaign:
    return campaign.parse(f"name: t\nnodes: [{nodes}]\nenvironments: [{envs}]\ntests:\n{tests}"
                          "repetitions: {min: 6, max: 6}\ntimeout: 30\n")


def _agent(*tools: str) -> dict[str, Any]:
    return {"host_agent": True, "kubernetes": True, "tool_versions": {t: f"{t} 1.0" for t in tools}}


def _said(c: campaign.Campaign, known: dict[str, dict[str, Any]]) -> str:
    return "\n".join(check_nodes(c, known))


def test_every_test_of_the_tool_is_named_and_only_installing_is_offered_when_nothing_else_would_run() -> None:
    said = _said(_campaign("n1", "host", SYSBENCH), {"n1": _agent("fio")})
    assert said == ("node 'n1': its host agent reports no sysbench installed, so it would refuse every host run "
                    "of sysbench-cpu and sysbench-memory: install sysbench on that host (e.g. apt-get install "
                    "sysbench; the agent looks again every PODTAX_AGENT_FACTS_INTERVAL_S, 300 s by default, or at "
                    "its restart)"), said


def test_the_ways_that_leave_a_campaign_to_run_are_offered() -> None:
    tests = SYSBENCH + "  - test: fio\n    params: {}\n"
    said = _said(_campaign("n1, n2", "host, kubernetes", tests), {"n1": _agent("fio"), "n2": _agent("sysbench", "fio")})
    assert said.endswith("at its restart), or drop 'n1' from nodes:, or drop sysbench-cpu and sysbench-memory "
                         "from tests:, or leave host out of environments:"), said
    assert "n2" not in said.split(":")[0], said


def test_a_node_lacking_the_tool_too_is_no_way_out() -> None:
    said = _said(_campaign("n1, n2", "host", SYSBENCH), {"n1": _agent(), "n2": _agent()})
    assert said.count("reports no sysbench") == 2 and "from nodes:" not in said, said


def test_an_agent_older_than_the_network_templates_is_told_apart_where_its_facts_allow() -> None:
    c = _campaign("n1", "host", NET)
    old = _said(c, {"n1": _agent("sysbench", "fio")})  # no later tool in its facts: old, or iperf3 not installed
    assert ("its host agent reports no iperf3 installed (if it is installed, that host's agent predates podtax's "
            "iperf3 test and does not look for it: upgrade the agent), so it would refuse") in old, old
    new = _said(c, {"n1": _agent("sysbench", "sockperf")})  # it looks for sockperf: it looks for iperf3 too
    assert "reports no iperf3 installed, so it would refuse" in new and "predates" not in new, new
    assert "predates" not in _said(_campaign("n1", "host", SYSBENCH), {"n1": _agent()})


def test_no_tool_list_or_no_host_runs_is_not_judged() -> None:
    assert _said(_campaign("n1", "host", SYSBENCH), {"n1": {"host_agent": True}}) == ""
    assert _said(_campaign("n1", "kubernetes", SYSBENCH), {"n1": _agent()}) == ""
