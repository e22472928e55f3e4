"""Node names an import manifest writes two ways (audit: `Node-1` on the host rows and `node-1` on the pod rows, as
hand-written CSVs and different tools give): the import took them as two nodes, so the host and pod runs fell into
one-sided cells, without a word. Kubernetes writes node names in lowercase and host names ignore case: the import now
keeps them in lowercase (one node) and says which spellings it joined. Names that differ otherwise (a full and a
short name, node1.example.com and node1) are not joined, but the import names both in a warning: their cells get no
ratio. Through `podtax import --dry-run` (the real entry point) and the events the import builds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from podtax.cli import importer
from podtax.cli.main import main
from podtax.cli.manifest import read_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
PARAMS = "threads=1 max_prime=100000 events=200 time=0"


def _manifest(folder: Path, rows: list[tuple[str, str]]) -> Path:
    """One sysbench-cpu row per (node, env), an hour apart."""
    shutil.copy(CORPUS / "sysbench-cpu-prime100000-1t.log", folder / "cpu.log")
    lines = [f"cpu.log,{node},{env},sysbench-cpu,{PARAMS},2024-03-01T{10 + i:02d}:00:00Z,\n"
             for i, (node, env) in enumerate(rows)]
    (folder / "m.csv").write_text(HEADER + "".join(lines))
    return folder / "m.csv"


CASES = {  # id: (rows, the node of every event, fragments of the warnings expected (all of them, in order))
    "case differs": ([("Node-1", "host"), ("node-1", "kubernetes")], ["node-1", "node-1"],
                     ["warning: node names ignore case: Node-1 (line 2) and node-1 (line 3) are one node, imported "
                      "as node-1 (Kubernetes writes node names in lowercase), so their host and pod runs pair; "
                      "write node-1 throughout the manifest to silence this"]),
    "capitals on both sides": ([("NODE-1", "host"), ("NODE-1", "kubernetes")], ["node-1", "node-1"],
                               ["warning: node NODE-1 (line 2) is imported as node-1: node names ignore case"]),
    "full and short name": ([("node1.example.com", "host"), ("node1", "kubernetes")],
                            ["node1.example.com", "node1"],
                            ["warning: sysbench-cpu: node node1.example.com has host rows only and node node1 "
                             "kubernetes rows only: if they are one machine under a full and a short name, give both "
                             "the same node name"]),
    "other names": ([("alpha", "host"), ("beta", "kubernetes")], ["alpha", "beta"],
                    ["warning: sysbench-cpu: node(s) alpha have host rows only and beta kubernetes rows only, so their "
                     "runs fall into one-sided cells and none gets a kubernetes/host ratio"]),
    "paired": ([("node-1", "host"), ("node-1", "kubernetes"), ("node-2", "host"), ("node-2", "kubernetes")],
               ["node-1", "node-1", "node-2", "node-2"], []),
    "host only": ([("node-1", "host"), ("node-2", "host")], ["node-1", "node-2"], []),
}

for _name, (_host, _pod) in {"addresses": ("10.0.0.1", "10.0.0.2"),  # never a full and a short name: the generic words
                             "region and address": ("cn-hangzhou.192.168.0.1", "cn-hangzhou.192.168.0.2"),
                             "one first label, two domains": ("node1.a.example", "node1.b.example")}.items():
    CASES[_name] = ([(_host, "host"), (_pod, "kubernetes")], [_host, _pod],
                    [f"warning: sysbench-cpu: node(s) {_host} have host rows only and {_pod} kubernetes rows only"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_names_two_ways_are_joined_or_named(name: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rows, nodes, warnings = CASES[name]
    manifest = _manifest(tmp_path, rows)
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 0
    said = [" ".join(line.split()) for line in capsys.readouterr().err.split("warning: ")[1:]]
    assert len(said) == len(warnings), said
    for line, fragment in zip(said, warnings, strict=True):
        assert ("warning: " + line).startswith(fragment), line
    built = [importer.build_event(row, "old", i) for i, row in enumerate(read_manifest(manifest))]
    assert [e.data.run.node for e in built] == nodes
    # the run id follows the node as written, as podtax before 6de8b23 derived it (test_import_old_node_case.py)
    assert all(e.data.run.run_id == importer.run_id_for("old", "cpu.log", written, e.data.run.env, row.started_at,
                                                        e.data.stdout)
               for e, (written, _env), row in zip(built, rows, read_manifest(manifest), strict=True))


def test_two_spellings_of_one_file_node_and_env_are_a_duplicate(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path, [("Node-1", "host"), ("node-1", "host")])
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 2
    assert ("line 3: duplicate of line 2 (same file, node and env; node names ignore case: Node-1 is node-1)"
            in " ".join(capsys.readouterr().err.split()))
