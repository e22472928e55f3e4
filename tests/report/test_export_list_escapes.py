"""A list column's elements in the exported CSV files are written as event_payloads.printable writes text.

exports._as_text made every VARCHAR column printable (test_export_control_chars.py) but left VARCHAR[] columns, such
as runs.flags, as they were: a flag holding an ESC sequence, stored before flags were checked, reached runs.csv raw
(`cat runs.csv` ran it). The flag is written here straight into the store (its runs table), as an old store holds it."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax.event_payloads import printable
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import cli_output, serve
from tests.report.test_report_hostile import named_events

FLAG = "RETRIED\x1b]0;owned\x07\x1b[2J\u202e"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = Store(tmp_path_factory.mktemp("flagx") / "podtax.duckdb")
    try:
        store.write_batch(named_events("flg", "node-1", "ms", "1.0"))
        with store.transaction() as cur:  # as a store written before flags were checked holds it
            cur.execute("UPDATE runs SET flags = [$1, 'SHORT'] WHERE campaign = 'flg'", [FLAG])
        with serve(create_app(store)) as u:
            yield u
    finally:
        store.close()


def test_csv_export_escapes_list_elements(url, tmp_path: Path) -> None:
    cli_output("export", "flg", "--csv", str(tmp_path / "csv"), "--api", url)
    raw = (tmp_path / "csv" / "runs.csv").read_bytes()
    assert b"\x1b" not in raw and b"\x07" not in raw and "\u202e".encode() not in raw
    with open(tmp_path / "csv" / "runs.csv", newline="", encoding="utf-8") as f:
        runs = list(csv.DictReader(f))
    # DuckDB writes a list as [a, b], quoting an element that holds a bracket and doubling its backslashes
    shown = {r["flags"].replace("\\\\", "\\") for r in runs}
    assert runs and shown == {f"['{printable(FLAG)}', SHORT]"}, shown
