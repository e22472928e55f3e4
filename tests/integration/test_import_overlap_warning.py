"""`podtax import` warns of exactly the rows whose runs the analyzer flags OVERLAP or stores as one run.

The analyzer flags two runs of one node OVERLAP when their spans share more than a second, whatever their env or test
(overlap.py): a host and a kubernetes row at one date-only start measured each other. The importer grouped its
OVERLAP warning by node, env and test at one start: it said nothing of the host and pod rows (flagged), and named
failed rows whose logs give no run length (no span: never flagged). The real CLI, a real nats-server, parser and
analyzer with its DuckDB file; the corpus log reports a 1.0916 s run."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.integration.harness import services, wait_for
from tests.integration.importing import CORPUS, HEADER

CPU = "sysbench-cpu,threads=1 max_prime=100000 events=200 time=0"
ROWS = (  # manifest line -> row
    (2, f"a.log,node-1,host,{CPU},2024-03-01,"),
    (3, f"b.log,Node-1,kubernetes,{CPU},2024-03-01,"),  # the pod run at the host run's start: both flagged
    (4, f"c.log,node-1,host,{CPU},2024-03-01,"),  # line 2's bytes: stored as one run, not a run of its own
    (5, f"f1.log,node-1,host,{CPU},2024-03-01,"),  # failed, no run length: overlaps nothing
    (6, f"f2.log,node-1,host,{CPU},2024-03-01,"),
    (7, f"d.log,node-1,host,{CPU},2024-03-01T00:00:00.05,"),  # 0.05 + 1 < 1.0916: overlaps line 2
    (8, f"e.log,node-1,host,{CPU},2024-03-01T00:00:00.5,"),  # 0.5 + 1 >= 1.0916 and 1.1416: overlaps none
    (9, f"g.log,node-2,host,{CPU},2024-03-01,"),  # another node
)


def _manifest(folder: Path) -> Path:
    for file in ("a.log", "b.log", "c.log", "d.log", "e.log", "g.log"):
        shutil.copyfile(CORPUS, folder / file)
    (folder / "f1.log").write_text("FATAL: Cannot allocate memory\n")
    (folder / "f2.log").write_text("FATAL: another error\n")
    path = folder / "m.csv"
    path.write_text(HEADER + "".join(f"{row}\n" for _, row in ROWS))
    return path


def _named(said: str, what: str) -> set[int]:
    """The manifest lines the warnings containing `what` name."""
    return {int(n) for lines in re.findall(rf"lines ([\d, ]+): [^:]*{what}", said) for n in lines.split(", ")}


async def test_the_warnings_name_the_rows_flagged_overlap_and_stored_as_one(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    manifest = _manifest(tmp_path)
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["import", "--dry-run", "--campaign", "imp", str(manifest)]) == 0
    dry = " ".join(capsys.readouterr().err.split())
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        assert await asyncio.to_thread(main, ["import", "--campaign", "imp", str(manifest)]) == 0
        said = " ".join(capsys.readouterr().err.split())
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE status IS NOT NULL")[0][0] == 7, 60,
                       "the 7 runs stored (8 rows, one a copy)")
        await asyncio.sleep(1)  # a late copy's result would be dropped, not stored: nothing more arrives
        held = dict(s.query("SELECT l.imported_from, r.flags FROM raw_logs l JOIN runs r USING (run_id)"))
    line = {row.split(",")[0]: n for n, row in ROWS}
    assert sorted(held) == sorted(set(line) - {"c.log"})
    flagged = {line[file] for file, flags in held.items() if any(f.startswith("OVERLAP") for f in flags)}
    assert flagged == {2, 3, 7}
    for out in (dry, said):
        assert _named(out, "overlap in time") == flagged, out
        assert ("lines 2, 3, 7: sysbench-cpu (host), sysbench-cpu (kubernetes) on node-1 overlap in time (from "
                "2024-03-01T00:00:00+00:00): the analyzer flags them OVERLAP and gives no ratio") in out
        assert _named(out, "log the same text") == {2, 4}
        assert "OVERLAP" not in out.replace("the analyzer flags them OVERLAP", "")
