"""Importing the same manifest again says that nothing new was added: it printed "imported 2 log(s)" again.
JetStream's publish ack marks a message id it already stored (`duplicate`); the import counts them. A real
nats-server and the real CLI."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.integration.harness import stream_messages

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ROW = "{file},node-{i},host,sysbench-cpu,threads=1 max_prime=100000 events=200 time=0,2024-03-01T10:00:00Z,\n"


async def test_a_second_import_of_the_same_manifest_says_nothing_was_new(
        tmp_path: Path, nats_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    shutil.copyfile(CORPUS / "debian12-x86_64/sysbench-cpu-prime100000-1t.log", tmp_path / "a.log")
    manifest = tmp_path / "manifest.csv"
    header = "file,node,env,test,params,started_at,tool_version\n"
    said = []
    for rows in (2, 3):  # the same two logs, then those and a third
        manifest.write_text(header + "".join(ROW.format(file="a.log", i=i) for i in range(rows)))
        assert await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "old"]) == 0
        said.append(capsys.readouterr().out.strip())
        if rows == 2:
            before = await stream_messages(nats_url)
            assert await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "old"]) == 0
            said.append(capsys.readouterr().out.strip())
            assert await stream_messages(nats_url) == before
    assert said[0].startswith("published 2 log(s) to campaign old; the analyzer drops any it holds already (imported "
                              "more than 2 minutes ago, or under another file name)")
    drops = "; the analyzer drops any it holds already under another file name. See `podtax report old`."
    assert said[1] == "published 0 new log(s) to campaign old, 2 already there" + drops
    assert said[2] == "published 1 new log(s) to campaign old, 2 already there" + drops
    assert said[2] == "published 1 new log(s) to campaign old, 2 already there" + drops
