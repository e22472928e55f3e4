"""One node whatever the case of its name (audit hE): a manifest's host rows on `Node-1` and its pod rows on `node-1`
(hand-written CSVs and different tools spell it so) made two nodes, each cell one side only, and nothing said so.
Kubernetes writes node names in lowercase and host names ignore case: the import now stores node-1 for both, with a
warning naming both spellings, and the report gives the cell its ratio. The real CLI imports a real sysbench log into a
real analyzer and parser on a real nats-server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.importing import cli, imported, paired_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"


async def test_node_names_differing_in_case_make_one_cell(nats_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    text = CORPUS.read_text()
    manifest = paired_manifest(tmp_path, "named", test="sysbench-cpu", params="threads=1 max_prime=100000 events=200",
                               month=5, runs=6, log=lambda env, i: text)
    manifest.write_text(manifest.read_text().replace(",node-1,host,", ",Node-1,host,"))  # the host rows' spelling
    async with imported(nats_url, tmp_path, {"named": manifest}) as url:
        said = " ".join(capsys.readouterr().err.split())
        assert await cli("report", "named", "--api", url, "--json") == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
    assert {c["node"] for c in cells} == {"node-1"}, cells
    head = next(c for c in cells if c["primary"])
    assert (head["n_host"], head["n_pod"]) == (6, 6) and head["ratio"] is not None, head
    assert "warning: node names ignore case: Node-1 (line 2) and node-1 (line 3) are one node, imported as node-1" \
        in said, said
