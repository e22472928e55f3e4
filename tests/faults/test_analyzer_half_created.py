"""A DuckDB file whose creation stopped part-way (audit hH): on a full disk (a 200 KB tmpfs, nearly full) or under a
file size limit, DuckDB wrote its main header and its first database header, 8 KiB, and stopped. The analyzer said
the disk was full; once space was freed every later start was refused, 'the file is damaged (cut short or
overwritten): restore it from a backup', though no database was ever written to it (its header names no checkpoint,
no block, and no WAL lies beside it), as a 0-byte file is taken as a new one (test_analyzer_empty_file). Now such a
file is made anew, and said so; a file whose header names a checkpoint, or beside a WAL, is left as it is."""

from __future__ import annotations

from pathlib import Path

from podtax import natsserver

from tests.e2e.test_analyzer_empty_file import SAID, analyzer, refusal, serves_once

HEADERS = 3 * 4096  # DuckDB's main header and its two database headers


def test_a_file_whose_creation_stopped_does_not_block_the_next_start(tmp_path: Path, nats_url: str) -> None:
    db = tmp_path / "data" / "podtax.duckdb"
    last = refusal(analyzer(db, nats_url, natsserver.free_port(), fsize=8192))
    assert last.startswith(SAID.format(db=db) + "a file size limit stops its writes"), last
    assert 0 < db.stat().st_size < HEADERS  # what DuckDB leaves (as on a full disk)
    served, err = serves_once(db, nats_url)
    assert served, err  # refused before: 'the file is damaged ...: restore it from a backup'
    assert db.stat().st_size >= HEADERS, err
    assert "holds no database" in err, err


def test_a_file_cut_to_its_headers_after_a_checkpoint_is_left_as_it_is(tmp_path: Path, nats_url: str) -> None:
    """A real database cut short to 8 KiB: its header names the checkpoint, so it is not taken for a new file."""
    db = tmp_path / "podtax.duckdb"
    served, err = serves_once(db, nats_url)
    assert served, err
    whole = db.read_bytes()
    db.write_bytes(whole[:8192])
    last = refusal(analyzer(db, nats_url, natsserver.free_port()))
    assert "damaged" in last, last
    assert db.read_bytes() == whole[:8192]
