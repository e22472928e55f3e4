"""The log text that makes an imported run's capture: its line ends CRLF or LF alike.

An imported run is known by its capture (imports_twice.CAPTURE: campaign, env, test, params, node in any case, start,
and the log): the analyzer drops a newcomer that is a stored run's capture (store_imports), `podtax imports-twice`
lists stored pairs (imports_twice), `podtax import` warns of rows of one capture. A copy of a log whose line ends were
rewritten (CRLF for LF: a copy through Windows, a mail, a git checkout with autocrlf) is the same run: every parser
reads both alike (parsers._clean turns CRLF into LF before parsing; every corpus log parses to the same figures, flags,
tool build or failure both ways), and so does the provenance split (shlex takes CR for blank). So the capture compares
the text with CRLF as LF; other differences (a trailing newline added, a lone CR) still make another run.
"""

from __future__ import annotations


def capture_text(text: str) -> str:
    """`text` with each CRLF as LF: what the capture compares."""
    return text.replace("\r\n", "\n") if "\r" in text else text


def capture_sql(column: str) -> str:
    """The same in DuckDB SQL, of the text column `column`."""
    return f"replace({column}, chr(13) || chr(10), chr(10))"
