"""Host and pod logs of one node, test and params that ran different tool builds (audit 8c: host logs printing
sysbench 1.0.20, pod logs 1.0.18): the import and its dry run said nothing, and the report later flagged the
cell CONFOUNDED and withheld its ratio. Both now warn per node, test and params, naming both builds as the
analyzer compares them. The real CLI: a dry run without NATS, and a real import through a real nats-server,
parser and analyzer, whose report flags CONFOUNDED on exactly the cells the import warned of."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.cli.main import main

from tests.integration.harness import services, wait_for

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SYSBENCH = CORPUS / "debian12-x86_64/sysbench-cpu-prime100000-1t.log"  # prints sysbench 1.0.20
HEADER = "file,node,env,test,params,started_at,tool_version\n"
CPU = ("sysbench-cpu", "threads=1 max_prime=100000 events=200 time=0")
DISK = ("hdparm", "mode=disk device=/dev/sda1")
S20 = "sysbench 1.0.20 (build using system LuaJIT 2.1.0-beta3)"
S18 = "sysbench 1.0.18 (build using system LuaJIT 2.1.0-beta3)"
SAME = "run both sides with the same tool build"
CPU_CELL = "sysbench-cpu events=200 max_prime=100000 threads=1 time=0"
DISK_CELL = "hdparm device=/dev/sda1 mode=disk"

# node: ((test, params), rows as (env, file, tool_version), the warning expected or None)
CASES = {
    "different-builds": (CPU, [("host", "v20.log", ""), ("kubernetes", "v18.log", "")],
                         f"{CPU_CELL} on different-builds: the host rows ran {S20} and the kubernetes rows {S18}, so "
                         f"the report flags the cell CONFOUNDED and withholds its kubernetes/host ratio; {SAME}"),
    "same-build": (CPU, [("host", "v20.log", ""), ("kubernetes", "v20.log", "")], None),
    "host-mixed": (CPU, [("host", "v20.log", ""), ("host", "v18.log", ""), ("kubernetes", "v20.log", "")],
                   f"{CPU_CELL} on host-mixed: the host rows ran 2 builds ({S18} + {S20}) and the kubernetes rows "
                   f"{S20}, so the report flags the cell CONFOUNDED"),
    # hdparm prints no version: the rows' tool_version is the build, none on either side is the same build
    "no-version": (DISK, [("host", "hdparm.txt", ""), ("kubernetes", "hdparm.txt", "")], None),
    "no-version-on-pod": (DISK, [("host", "hdparm.txt", "hdparm v9.65"), ("kubernetes", "hdparm.txt", "")],
                          f"{DISK_CELL} on no-version-on-pod: the host rows ran hdparm 9.65 and the kubernetes rows "
                          f"hdparm, so the report flags the cell CONFOUNDED and withholds its kubernetes/host ratio; "
                          f"{SAME} (hdparm without a version: logs that print none, on rows with no tool_version; "
                          f"give those rows the machine's `--version`)"),
    # the pod log is rejected (a failed run, in no cell): no cell has both sides
    "pod-rejected": (CPU, [("host", "v20.log", ""), ("kubernetes", "v18-cut.log", "")], None),
}


def _manifest(folder: Path, nodes: list[str]) -> Path:
    text = SYSBENCH.read_text()
    (folder / "v20.log").write_text(text)
    (folder / "v18.log").write_text(text.replace("sysbench 1.0.20", "sysbench 1.0.18"))
    (folder / "v18-cut.log").write_text(text.replace("sysbench 1.0.20", "sysbench 1.0.18")
                                        .split("General statistics")[0])
    shutil.copyfile(CORPUS / "hdparm/tinkerboard/hdparm.txt", folder / "hdparm.txt")
    rows = [f"{file},{node},{env},{test},{params},2024-03-01T{10 + i}:00:00Z,{version}\n"  # an hour apart
            for node in nodes for (test, params), runs, _ in [CASES[node]]
            for i, (env, file, version) in enumerate(runs)]
    manifest = folder / "m.csv"
    manifest.write_text(HEADER + "".join(rows))
    return manifest


def _warnings(err: str) -> list[str]:
    return [" ".join(w.split()) for w in err.split("warning: ")[1:] if "CONFOUNDED" in w]


@pytest.mark.parametrize("node", sorted(CASES))
def test_the_dry_run_warns_of_sides_with_different_builds(node: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # no server: a dry run needs none
    assert main(["import", str(_manifest(tmp_path, [node])), "--campaign", "old", "--dry-run"]) == 0
    warnings, expected = _warnings(capsys.readouterr().err), CASES[node][2]
    if expected is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith(expected), warnings


async def test_the_import_warns_of_exactly_the_cells_the_report_flags_confounded(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    manifest = _manifest(tmp_path, sorted(CASES))
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        await s.parser()
        capsys.readouterr()
        assert await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "old"]) == 0
        warnings = _warnings(capsys.readouterr().err)
        rows = sum(len(runs) for _, runs, _ in CASES.values())
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign = 'old' AND status IS NOT NULL")
                       [0][0] == rows, 30, "every imported run stored")
        assert await asyncio.to_thread(main, ["report", "old", "--json"]) == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
    confounded = {c["node"]: c["flag_details"]["CONFOUNDED"] for c in cells if "CONFOUNDED" in c["flags"]}
    assert sorted(confounded) == sorted(n for n, (_, _, w) in CASES.items() if w is not None)
    assert len(warnings) == len(confounded)
    for node, detail in confounded.items():
        warning = next(w for w in warnings if f" on {node}: " in w)
        assert warning.startswith(CASES[node][2]), warning
        assert all(c["ratio"] is None for c in cells if c["node"] == node)  # withheld, as the warning says
        for build in (S20, S18) if node != "no-version-on-pod" else ("hdparm 9.65",):
            assert (build in warning) == (build in detail), (build, warning, detail)  # the same builds named
