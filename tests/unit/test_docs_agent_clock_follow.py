"""The docs say what 0341530 and 6aec754 made the code do: the host agent's clock check at start (its README's
'Its clock' and README.md's exit statuses: exit 2 over a day ahead of the NATS server's, a warning beyond SAID_S,
the line the agent prints), and `campaign status --follow`'s exit-3 line ending with the reasons the analyzer
stored (at most failed_runs.SHOWN). Figures and the line are taken from the code, so a change there shows here."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from podtax.cli.campaign import RUNS_FAILED
from podtax.cli.failed_runs import SHOWN
from podtax.event_payloads import EARLIEST, MAX_AHEAD
from podtax_host_agent.clock import SAID_S, clock_problem, too_early

REPO = Path(__file__).parents[2]


def _words(path: str) -> str:
    return " ".join((REPO / path).read_text().split())


def _exit_statuses() -> str:
    readme = _words("README.md")
    start = readme.index("Every command (`podtax`, or `python -m podtax`) exits 0")
    return readme[start:readme.index("An option that would change nothing", start)]


def test_the_host_agent_readme_says_its_clock_check() -> None:
    assert timedelta(days=1) == MAX_AHEAD  # "more than a day ahead"
    text = _words("services/host_agent/README.md")
    section = text[text.index("## Its clock"):text.index("## Configuration")]
    server = 1796577655.0  # 2026-12-06 17:20:55 UTC: the README's example, 30 h ahead
    line, stops = clock_problem(server + 30 * 3600, server, "n1") or ("", False)
    assert stops and f"`{line}`" in section, section
    assert "more than a day ahead**: it stops (exit 2)" in section, section
    assert f"**before {EARLIEST.year}**" in section and f"`{too_early(60, 'n1')}`" in section, section
    assert f"more than {SAID_S:.0f} s ahead or behind**: one warning line" in section, section


def test_readme_exit_statuses_name_the_clock_and_the_reasons_of_failed_runs() -> None:
    text = _exit_statuses()
    assert (f"the host agent at start for a clock that reads before {EARLIEST.year} or more than a day ahead of the "
            f"NATS server's, naming the node, the skew, the time each clock reads and the fix, NTP: a skew over "
            f"{SAID_S:.0f} s either way is one warning line") in text, text
    assert "(services/host_agent/README.md#its-clock)" in text, text
    assert (f"`campaign status`/`submit --follow`: a run failed, and the line ends with the reasons the analyzer "
            f"stored, most frequent first, at most {SHOWN}") in text, text
    assert f"finished with 2 failed run(s) (exit status {RUNS_FAILED}): 2 timeout: " in text, text
