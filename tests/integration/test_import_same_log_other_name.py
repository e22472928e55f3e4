"""The same log imported under a second file name is one run, not two (pA2, session 52).

A user who imports a folder of logs, then a copy of some of them under other names (a second manifest over a
backup folder, `host-1.log` beside `host-1 (copy).log`), gave the analyzer each run twice: the import's run id is
derived from the file name, and the analyzer recognised a capture it holds by campaign, file, env, node, start time
and log text, so another file name was another run. Each cell counted 12 runs of 6 (both copies flagged OVERLAP:
'ran at the same time as' the other, as if they had measured each other). The same capture is the same campaign,
env, node (any case), start time and log text (stdout and stderr, byte for byte but CRLF line ends as LF), whatever
the file's name: the copy is dropped, the stored run kept. The same log text at other start times (runs whose figures
happen to be equal) stays other runs. The real CLI imports real sysbench logs into a real analyzer and parser on a
real nats-server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from podtax import natsserver

from tests.integration.harness import services, wait_for
from tests.integration.importing import cli, paired_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"
PARAMS = "threads=1 max_prime=100000 events=200"


def _copied(manifest: Path, folder: Path) -> Path:
    """A second manifest in `folder` naming a copy of each of `manifest`'s logs under another file name, every other
    column as written."""
    folder.mkdir()
    lines = manifest.read_text().splitlines(keepends=True)
    rows = []
    for line in lines[1:]:
        file, rest = line.split(",", 1)
        shutil.copyfile(manifest.parent / file, folder / f"copy-of-{file}")
        rows.append(f"copy-of-{file},{rest}")
    path = folder / "copy.csv"
    path.write_text(lines[0] + "".join(rows))
    return path


async def test_a_log_imported_again_under_another_file_name_is_counted_once(nats_url, tmp_path, monkeypatch,
                                                                            capsys):
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    text = CORPUS.read_text()
    first = paired_manifest(tmp_path, "dup", test="sysbench-cpu", params=PARAMS, month=5, runs=6,
                            log=lambda env, i: text)
    copy = _copied(first, tmp_path / "backup")
    other_days = tmp_path / "june"  # the same log text, other start times: other runs with equal figures
    other_days.mkdir()
    june = paired_manifest(other_days, "june", test="sysbench-cpu", params=PARAMS, month=6, runs=6,
                           log=lambda env, i: text)
    async with services(nats_url, tmp_path) as s:
        port = natsserver.free_port()
        await s.analyzer(port=port)
        await s.parser()
        for manifest in (first, copy, june):
            assert await cli("import", str(manifest), "--campaign", "dup") == 0
        await wait_for(lambda: s.query("SELECT (SELECT count(*) FROM runs WHERE status = 'ok') + "
                                       "(SELECT count(*) FROM imported_duplicates)")[0][0] == 36, 60,
                       "every imported log stored or dropped")
        capsys.readouterr()
        assert await cli("report", "dup", "--api", f"http://127.0.0.1:{port}", "--json") == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
        overlapping = s.query("SELECT count(*) FROM runs WHERE len(list_filter(flags, lambda f: "
                              "starts_with(f, 'OVERLAP'))) > 0")[0][0]
    head = next(c for c in cells if c["primary"])
    assert (head["n_host"], head["n_pod"]) == (12, 12), (head["n_host"], head["n_pod"], head["flags"])
    assert "OVERLAP" not in head["flags"] and overlapping == 0, (head["flags"], overlapping)


async def test_the_same_file_name_in_manifests_of_other_days_is_other_runs(nats_url, tmp_path, monkeypatch, capsys):
    """day1/m.csv, day2/m.csv and day3/m.csv each name `host.log` and `kubernetes.log` (node-1, its own day; the
    same log text, so equal figures): three runs a side, not one."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    text = CORPUS.read_text()
    manifests = []
    for day in (1, 2, 3):
        folder = tmp_path / f"day{day}"
        folder.mkdir()
        rows = []
        for k, env in enumerate(("host", "kubernetes")):
            (folder / f"{env}.log").write_text(text)
            rows.append(f"{env}.log,node-1,{env},sysbench-cpu,{PARAMS},2024-05-0{day}T1{k}:00:00Z,\n")
        (folder / "m.csv").write_text("file,node,env,test,params,started_at,tool_version\n" + "".join(rows))
        manifests.append(folder / "m.csv")
    async with services(nats_url, tmp_path) as s:
        port = natsserver.free_port()
        await s.analyzer(port=port)
        await s.parser()
        for manifest in manifests:
            assert await cli("import", str(manifest), "--campaign", "days") == 0
        said = capsys.readouterr().out
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE status = 'ok'")[0][0] >= 2, 60,
                       "the first day's logs stored")
        await wait_for(lambda: s.query("SELECT count(*) FROM raw_logs")[0][0] == 6, 10, f"6 raw logs stored ({said})")
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE status = 'ok'")[0][0] == 6, 60, "6 parsed")
        assert await cli("report", "days", "--api", f"http://127.0.0.1:{port}", "--json") == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
    head = next(c for c in cells if c["primary"])
    assert (head["n_host"], head["n_pod"]) == (3, 3), head
