"""`podtax parse FILE... [--tool TOOL] [--json]`: parse saved benchmark logs offline (no NATS)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from podtax.cli.common import wide_console
from podtax.parsers import TEST_TOOL, TOOLS, Parsed, ParseFailure, parse_text, tool_of
from podtax.safefiles import MAX_LOG_BYTES, UnsafePath, decode_log, read_capped, real_path


def parse_file(path: Path, tool: str | None) -> dict[str, Any]:
    """One JSON-ready object for `path`: the parsed figures, or `error` with reason and detail.

    Only a regular file of at most MAX_LOG_BYTES is read (the most a raw log can carry on the bus), so a
    device, FIFO or multi-gigabyte file named by mistake is refused at once instead of read without end."""
    out: dict[str, Any] = {"file": str(path)}
    try:
        text = decode_log(read_capped(real_path(path), MAX_LOG_BYTES, str(path)))
    except (OSError, UnsafePath) as exc:
        detail = f"cannot read {path}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
        out["error"] = {"reason": "unreadable", "detail": detail}
        return out
    try:
        parsed = parse_text(text, tool)
    except ParseFailure as failure:
        out["error"] = {"reason": failure.reason, "detail": failure.detail}
        return out
    out.update(as_dict(parsed))
    return out


def as_dict(parsed: Parsed) -> dict[str, Any]:
    return {
        "tool": parsed.tool,
        "tool_version": parsed.tool_version,
        "tool_build": parsed.tool_build,
        "metrics": [{"name": m.name, "value": m.value, "unit": m.unit, "higher_is_better": m.higher_is_better}
                    for m in parsed.metrics],
        "echoed": dict(parsed.echoed),
        "flags": list(parsed.flags),
    }


def figure(value: float) -> str:
    """A figure as the log shows it: a count in full (21672955, not 2.1673e+07), other values with up to
    12 significant digits (7222554.38, not 7.22255e+06), so the table can be checked against the log."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def _show(console: Console, item: dict[str, Any]) -> None:
    if "error" in item:
        err = item["error"]
        console.print(f"[bold red]FAILED[/] {escape(item['file'])}: [red]{err['reason']}[/] — "
                      f"{escape(err['detail'])}", highlight=False, soft_wrap=True)  # `[pid]` in a log: not markup
        return
    version = " ".join(v for v in (item["tool_version"], f"({item['tool_build']})" if item["tool_build"] else "")
                       if v)
    table = Table(title=escape(f"{item['file']} — {item['tool']} {version}".rstrip()), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("better")
    for m in item["metrics"]:
        table.add_row(escape(m["name"]), figure(m["value"]), escape(m["unit"]),
                      "higher" if m["higher_is_better"] else "lower")
    console.print(table)
    if item["echoed"]:
        console.print("echoed: " + escape(", ".join(f"{k}={v}" for k, v in item["echoed"].items())), highlight=False,
                      soft_wrap=True)
    for flag in item["flags"]:
        console.print(f"[yellow]flag[/] {escape(flag)}", highlight=False, soft_wrap=True)


NAMES = sorted({*TOOLS, *TEST_TOOL})  # what --tool takes


def not_a_log(name: str) -> str | None:
    """Why the file `name`, given on the command line, names no log to parse (a usage mistake, as argparse's
    FileType and typer's `exists=True` make it: exit 2): "no such file", "is a folder", or of another kind (a
    device, FIFO or socket); else None. A log that cannot be read (permissions), is empty or above the cap is the
    parser's to refuse (its FAILED line, exit 1)."""
    try:
        mode = os.stat(name).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except ValueError:  # 'embedded null byte' (main(argv): no shell passes one)
        return "holds a NUL character, which no file name can"
    except OSError:  # permissions, a loop of links: parse_file names it
        return None
    if stat.S_ISDIR(mode):
        return "is a folder"
    return None if stat.S_ISREG(mode) else "is a device, FIFO or socket, not a log file"


def what_to_fix(name: str, problem: str) -> str:
    """`problem` (not_a_log's) with what to do about it, for the one stderr line naming `name`."""
    if problem == "is a folder":
        pattern = os.path.join(name.rstrip("/") or "/", "*.log")
        example = f", e.g. {pattern}" if pattern.isprintable() else ""
        return f"is a folder: name the logs in it{example}"
    if problem == "no such file":
        return "no such file: check its path (a shell pattern that matched nothing stays as written)"
    if problem.startswith("is a device"):
        return f"{problem}: save the benchmark's output to a file and name that"
    return problem


def register(app: typer.Typer) -> None:
    @app.command("parse")
    def parse_command(
        files: list[str] = typer.Argument(..., help="Log files to parse."),
        tool: str | None = typer.Option(None, "--tool", help=f"Tool or test name ({', '.join(NAMES)}); "
                                        "autodetected when omitted."),
        as_json: bool = typer.Option(False, "--json", help="Print a JSON list, one object per file parsed; a "
                                     "name that is no log file is left out of it (named on stderr) and the exit "
                                     "status is 2 beside valid JSON: check the status, not only the list."),
    ) -> int:
        """Parse benchmark logs offline and show the figures, or why a log was rejected.

        Exit status: 0 when every log parsed; 1 when any was rejected (each named with its reason, the count on
        stderr); 2 for a usage mistake: an unknown --tool or an empty file name (nothing is parsed), or a name that
        is no log file (missing, a folder, a device): as grep and cat do, one stderr line for each such name saying
        what to fix, and the other logs are parsed and printed all the same."""
        if not all(files):
            typer.echo("podtax parse: a file name is empty (an unset shell variable?): give the path of a log "
                       "(see 'podtax parse --help')", err=True)
            raise typer.Exit(2)
        if tool is not None:
            try:
                tool_of(tool)
            except ValueError as exc:
                typer.echo(f"podtax parse: --tool: {exc}", err=True)
                raise typer.Exit(2) from None
        logs = []
        wrong = 0
        for name in files:  # each name that is no log: one line (repr: a newline in it stays on the line)
            if problem := not_a_log(name):
                typer.echo(f"podtax parse: {name!r}: {what_to_fix(name, problem)}", err=True)
                wrong += 1
            else:
                logs.append(name)
        results = [parse_file(Path(name), tool) for name in logs]
        if not results:
            raise typer.Exit(2)
        if as_json:
            typer.echo(json.dumps(results, indent=2, ensure_ascii=False))
        else:
            console = wide_console()  # off a terminal: whole lines, tables 140 columns wide
            for item in results:
                _show(console, item)
        failed = sum("error" in item for item in results)
        if failed and not as_json:
            typer.echo(f"{failed} of {len(results)} file(s) failed to parse", err=True)
        if wrong or failed:
            raise typer.Exit(2 if wrong else 1)
        return 0
