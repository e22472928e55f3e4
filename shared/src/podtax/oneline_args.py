"""An argparse parser whose usage mistakes are one line on stderr and exit 2: argparse's own prints its
whole usage block first (seven lines for podtax-kubesim). The entry points that take arguments use it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

# control characters as Python writes them in a string: a value typed with a newline (`--db "$(cmd)"`, a file name)
# made one error several lines, and an escape sequence in one would be run by the terminal
# (and the line and paragraph separators U+2028/U+2029, which Python's splitlines, editors and some log viewers end a
# line at)
_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """`text` on one line: each control character (newline, escape...) written as `\\n`, `\\x1b`."""
    return text.translate(_CONTROLS)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {one_line(message)}. Try '{self.prog} --help'.", file=sys.stderr)
        raise SystemExit(2)


def a_path(value: str) -> Path:
    """A path option's value (argparse's `type=`): Path("") is the current folder, which an unset shell variable
    (`--kubeconfig "$KUBECONFIG"`) gave silently; it is a usage mistake, one line and exit 2."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the path is empty (an unset shell variable?): give a path")
    return Path(value)


def a_file(value: str) -> Path:
    """A file option's value that must be there (a kubeconfig, a profile): said for the option, not for the
    PODTAX_* setting it overrides."""
    path = a_path(value)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{value} is not a readable file: give an existing file")
    return path
