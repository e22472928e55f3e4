"""A command's help names only options that command has: `podtax campaign submit --help` said its --follow
exits 1 "when --timeout ran out", but submit has no --timeout (only `campaign status` has). Options quoted
in backticks (another command's line, such as `podtax campaign status NAME --follow --timeout S`) are
not the command's own and are left out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from podtax.cli.main import app


def commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every leaf command with its path (typer's groups carry `commands`; typer vendors its own click)."""
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")
    else:
        yield path, command


def foreign_options(command: Any) -> list[str]:
    """Options a command's help texts name outside backticks that are not among its parameters."""
    own = {o for p in command.params for o in [*p.opts, *p.secondary_opts]}
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    named = (re.findall(r"(?<![\w-])--[a-z][a-z-]*", re.sub(r"`[^`]*`", "", text)) for text in texts)
    return sorted({o for options in named for o in options} - own)


def test_help_names_only_own_options() -> None:
    found = {path: foreign_options(c) for path, c in commands(typer.main.get_command(app), "podtax")}
    assert len(found) >= 15  # every subcommand was looked at
    assert {path: options for path, options in found.items() if options} == {}
