"""One cell for one size, whatever its case (audit hB2, planted campaigns): a manifest's host rows `bs=4k` and its
pod rows `bs=4K` (fio reads both as 4096 bytes, and the template itself spells it 4K) fell into two cells, each with
one side only, and the dry run warned "the host rows ran bs=4k and the kubernetes rows bs=4K", though both ran the
same; neither was the cell a podtax campaign's `bs: 4k` makes (bs=4K). Now the import stores each value as the
template reads it. The real CLI imports a real fio capture into a real analyzer and parser on a real nats-server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.importing import HEADER, cli, imported

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "fio-randread-4k-qd16.json"
SPELLED = {"host": "bs=4k size=64m", "kubernetes": "bs=4K size=64M"}


async def test_size_spellings_make_one_cell(nats_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    text = CORPUS.read_text()
    rows = []
    for i in range(6):
        for k, (env, sizes) in enumerate(SPELLED.items()):
            (tmp_path / f"{env}-{i}.json").write_text(text)
            rows.append(f"{env}-{i}.json,node-1,{env},fio,rw=randread {sizes} iodepth=16 direct=1 runtime=3,"
                        f"2024-05-{1 + i:02d}T{10 + k}:00:00Z,\n")
    (tmp_path / "m.csv").write_text(HEADER + "".join(rows))
    assert await cli("import", str(tmp_path / "m.csv"), "--campaign", "dry", "--dry-run") == 0
    assert "different cells" not in capsys.readouterr().err  # no warning that the sides ran other params
    async with imported(nats_url, tmp_path, {"sizes": tmp_path / "m.csv"}) as url:
        capsys.readouterr()
        assert await cli("report", "sizes", "--api", url, "--json") == 0
        cells = json.loads(capsys.readouterr().out)["cells"]
    assert {c["params"] for c in cells} == {"bs=4K direct=true iodepth=16 runtime=3 rw=randread size=64M"}
    head = next(c for c in cells if c["primary"])
    assert (head["n_host"], head["n_pod"]) == (6, 6) and "PARAMS_MISMATCH" not in head["flags"], head
