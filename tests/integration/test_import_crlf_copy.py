"""A copy of a log whose line ends were rewritten (CRLF for LF), imported again, is the run already stored.

The analyzer knows an imported run by its capture (campaign, env, test, params, node in any case, start, log); the log
was compared byte for byte, so a CRLF copy (through Windows, a mail, git's autocrlf) under another file name was
stored as a second run, and both were flagged OVERLAP (they start together). Every parser reads both alike
(tests/parsers/test_crlf_alike.py), so the capture takes CRLF as LF (podtax.capture_text). The real CLI, a real
nats-server, parser and analyzer with its DuckDB file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.integration.harness import services, wait_for
from tests.integration.importing import CORPUS, HEADER

CPU = "sysbench-cpu,threads=1 max_prime=100000 events=200 time=0"


def _manifest(folder: Path, logs: dict[str, bytes], rows: list[str]) -> str:
    folder.mkdir()
    for file, data in logs.items():
        (folder / file).write_bytes(data)
    (folder / "m.csv").write_text(HEADER + "".join(f"{row}\n" for row in rows))
    return str(folder / "m.csv")


async def test_a_crlf_copy_of_a_log_is_the_run_stored(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    lf = CORPUS.read_bytes()
    crlf = lf.replace(b"\n", b"\r\n")
    assert b"\r\n" not in lf and crlf != lf
    first = _manifest(tmp_path / "day1", {"host.log": lf}, [f"host.log,node-1,host,{CPU},2024-03-01T10:00:00Z,"])
    again = _manifest(tmp_path / "copy", {"host-win.log": crlf},
                      [f"host-win.log,node-1,host,{CPU},2024-03-01T10:00:00Z,"])
    both = _manifest(tmp_path / "both", {"a.log": lf, "b.log": crlf},
                     [f"a.log,node-2,host,{CPU},2024-03-01,", f"b.log,node-2,host,{CPU},2024-03-01,"])
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        for manifest in (first, again, both):
            assert await asyncio.to_thread(main, ["import", "--campaign", "imp", manifest]) == 0
        said = " ".join(capsys.readouterr().err.split())
        await wait_for(lambda: s.query("SELECT count(*) FROM imported_duplicates")[0][0] == 2, 30,
                       "the two CRLF copies dropped as the runs stored")
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE status = 'ok'")[0][0] == 2, 30, "two runs")
        await asyncio.sleep(1)  # a copy's late result would be dropped, not stored
        runs = s.query("SELECT l.imported_from, r.node, r.flags FROM runs r JOIN raw_logs l USING (run_id) ORDER BY 1")
    assert runs == [("a.log", "node-2", []), ("host.log", "node-1", [])]  # one run each, no OVERLAP
    assert ("lines 2, 3: sysbench-cpu on node-2 (host) log the same text at one start (2024-03-01T00:00:00+00:00): "
            "stored as one run (1 dropped)") in said
    assert "overlap in time" not in said
