"""One cell for one setting, whatever its word (audit hE, network): a manifest's `reverse=yes` rows and its
`reverse=true` rows (the same iperf3 -R runs) fell into two cells, `reverse=yes` and `reverse=true`, each with
half the runs (INSUFFICIENT), and neither was the cell a podtax campaign's `reverse: true` makes. Now the
import stores a boolean param as the template reads it (`reverse=true`). The real CLI imports real corpus
captures into a real analyzer and parser on a real nats-server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.importing import HEADER, cli, imported

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net" / "iperf3-tcp-P2-reverse-2s.json"
WORDS = ("yes", "true", "True", "1", "on", "t")


async def test_bool_words_make_one_cell(nats_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    text = CORPUS.read_text()
    rows = []
    for i, word in enumerate(WORDS):
        for k, env in enumerate(("host", "kubernetes")):
            (tmp_path / f"{env}-{i}.json").write_text(text)
            rows.append(f"{env}-{i}.json,node-1,{env},iperf3,protocol=tcp duration=2 parallel=2 reverse={word},"
                        f"2024-05-{1 + i:02d}T{10 + k}:00:00Z,\n")
    (tmp_path / "m.csv").write_text(HEADER + "".join(rows))
    async with imported(nats_url, tmp_path, {"rev": tmp_path / "m.csv"}) as url:
        capsys.readouterr()
        assert await cli("report", "rev", "--api", url, "--json") == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
    assert {c["params"] for c in cells} == {"duration=2 parallel=2 protocol=tcp reverse=true"}
    head = next(c for c in cells if c["metric"] == "throughput_mbps")
    assert (head["n_host"], head["n_pod"]) == (6, 6) and "PARAMS_MISMATCH" not in head["flags"], head
