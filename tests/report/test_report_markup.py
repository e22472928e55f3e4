"""Text from the bus is printed as text by `podtax report`: a failed run's detail (a parser's quote of its log,
a runner's pod message) holding `[/]` stopped the command with rich's MarkupError and a traceback (audit hG),
`[link=...]` became a hyperlink, and an ESC in it reached the terminal (its title set, the screen cleared).
Real events in a real DuckDB file, served by the real analyzer app, read by the real CLI."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from podtax import events
from podtax.cli.main import main

from tests.report.conftest import cli_output, serve_batches
from tests.report.test_report_hostile import result_events

DETAIL = "expected a number, found '[/][link=http://evil.example]x[bold]' \x1b]0;pwned\x07\x1b[2J"


def _failed(campaign: str, n: int) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for i in range(n):
        run = events.RunSpec(run_id=f"{campaign}-f{i}", campaign=campaign, node="node-1", env="kubernetes",
                             test="sysbench-cpu", params={"threads": 1})
        out.append(events.run_failed(events.RunFailed(run=run, stage="parser", reason="unknown-format",
                                                      detail=DETAIL), "test"))
    return out


def test_failure_details_are_printed_as_text(tmp_path: Path) -> None:
    host = [1000.0 + i for i in range(6)]
    batches = [result_events("cells", host, [v * 0.97 for v in host]) + _failed("cells", 2),  # a table, then warnings
               _failed("nocells", 3)]  # no comparable result: the warnings alone
    with serve_batches(tmp_path, batches) as url:
        for campaign in ("cells", "nocells"):
            out = " ".join(cli_output("report", campaign, "--api", url).split())
            assert "[/][link=http://evil.example]x[bold]" in out, out
            assert "\x1b" not in out and "\\x1b]0;pwned\\x07\\x1b[2J" in out, out  # no terminal escape


def test_results_print_tool_versions_as_text(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    host = [1000.0 + i for i in range(6)]
    batch = result_events("odd", host, host, tool_version="3.33[/]\x1b[2J")
    with serve_batches(tmp_path, [batch]) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("COLUMNS", "300")
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert main(["results", "--campaign", "odd"]) == 0
    out = buf.getvalue()
    assert "sysbench 3.33[/]\\x1b[2J" in out, out
    assert "\x1b" not in out


def test_control_characters_from_the_bus_never_reach_a_terminal(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Free text of events (a failure's detail, a tool version and build, flags, host facts) is decoded with its
    control characters written out as \\xNN: an ESC sequence in a fio log's version line (`fio-3.33<ESC>]0;x`)
    or a runner's pod message reached `podtax report`'s flags and sentences, the workbook and the CSV."""
    import json

    esc = "\x1b]0;pwned\x07\x1b[2J"
    host = [1000.0 + i for i in range(6)]
    batch = [events.decode(json.dumps(e.model_dump(mode="json")))
             for e in result_events("ctl", host, host[:3], tool_version=f"1.0.20{esc}")
             + result_events("ctl", [], host[3:], tool_version="1.0.20", run_prefix="ctl-b")
             + _failed("ctl", 1)]
    raw = json.loads(json.dumps(_failed("ctl2", 1)[0].model_dump(mode="json")))
    raw["data"]["detail"] = f"pod said {esc}"
    batch.append(events.decode(json.dumps(raw)))
    assert batch[0].data.tool_version == "1.0.20\\x1b]0;pwned\\x07\\x1b[2J"
    assert batch[-1].data.detail == "pod said \\x1b]0;pwned\\x07\\x1b[2J"
    with serve_batches(tmp_path, [batch]) as url:
        monkeypatch.setenv("COLUMNS", "300")
        out = cli_output("report", "ctl", "--api", url) + cli_output("report", "ctl2", "--api", url)
    assert "\x1b" not in out and "\x07" not in out
    assert "1.0.20\\x1b]0;pwned" in out.replace("\n", "")
