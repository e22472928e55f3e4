"""Submit's check of a host campaign against the tools a listed node's host agent reports (its facts): the agent
refuses every host run of a tool it reports missing (tool-missing), so each such run would fail."""

from __future__ import annotations

from typing import Any

from podtax import campaign as campaign_file
from podtax import templates

# Tools host agents look for only since the iperf3 and sockperf templates (721ee64): an older agent leaves them out
# of its facts even when they are installed. Any of them in an agent's facts shows an agent that looks for them all.
LATER_TOOLS = frozenset({"iperf3", "sockperf"})


def host_tests(c: campaign_file.Campaign) -> dict[str, list[str]]:
    """Tool -> the campaign's tests run on hosts with it (each name once, sorted); {} without host runs."""
    if "host" not in c.environments:
        return {}
    out: dict[str, set[str]] = {}
    for t in (templates.get(s.test) for s in c.tests):
        if t.host_executable and "host" in t.environments:
            out.setdefault(t.tool, set()).add(t.name)
    return {tool: sorted(names) for tool, names in out.items()}


def lacking(c: campaign_file.Campaign, doc: dict[str, Any] | None) -> dict[str, list[str]]:
    """Tool -> tests of the campaign's host runs a node's agent would refuse; {} for a node without the agent's
    tool list (not judged)."""
    have = (doc or {}).get("tool_versions")
    if not isinstance(have, dict):
        return {}
    return {tool: tests for tool, tests in host_tests(c).items() if tool not in have}


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _maybe_old_agent(tool: str, have: dict[str, Any]) -> str:
    if tool not in LATER_TOOLS or LATER_TOOLS & set(have):
        return ""
    return (f" (if it is installed, that host's agent predates podtax's {tool} test and does not look for it: "
            f"upgrade the agent)")


def tool_problems(c: campaign_file.Campaign, node: str, known: dict[str, dict[str, Any]]) -> list[str]:
    """One line per tool the node's host agent reports missing: the node, the tool, every test of it, and the
    fixes that leave a campaign to run (install it; drop the node when another listed node has it; drop the tests
    when other tests would run there; leave host out when other environments are listed)."""
    doc = known.get(node) or {}
    missing = lacking(c, doc)
    refused_here = {name for tests in missing.values() for name in tests}
    problems = []
    for tool, tests in sorted(missing.items()):
        ways = [f"install {tool} on that host (e.g. apt-get install {tool}; the agent looks again every "
                f"PODTAX_AGENT_FACTS_INTERVAL_S, 300 s by default, or at its restart)"]
        if isinstance(c.nodes, list) and any(n != node and n in known and tool not in lacking(c, known[n])
                                             for n in c.nodes):
            ways.append(f"drop {node!r} from nodes:")
        if any(s.test not in refused_here for s in c.tests):
            ways.append(f"drop {_and(tests)} from tests:")
        if len(set(c.environments)) > 1:
            ways.append("leave host out of environments:")
        problems.append(f"node {node!r}: its host agent reports no {tool} installed"
                        f"{_maybe_old_agent(tool, doc['tool_versions'])}, so it would refuse every host run of "
                        f"{_and(tests)}: {', or '.join(ways)}")
    return problems
