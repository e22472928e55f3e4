"""A manifest's boolean params as words (audit hE, network): `reverse=true` on the rows of a real
`iperf3 -R -J` log was flagged PARAM_MISMATCH ("reverse echoed as 1, requested true") and its cell got no
verdict, though the template takes `true` (and pydantic's other words for a bool). The real import
dry run (no NATS) on the real corpus capture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from podtax.cli.main import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"
HEADER = "file,node,env,test,params,started_at,tool_version\n"


@pytest.mark.parametrize(("reverse", "mismatch"), [("true", False), ("True", False), ("yes", False), ("1", False),
                                                   ("on", False), ("false", True), ("no", True), ("0", True)])
def test_a_bool_param_written_as_a_word_matches_the_log(reverse, mismatch, tmp_path, capsys):
    shutil.copy(CORPUS / "iperf3-tcp-P2-reverse-2s.json", tmp_path / "r.json")
    params = f"protocol=tcp duration=2 parallel=2 reverse={reverse}"
    (tmp_path / "m.csv").write_text(HEADER + f"r.json,node-1,host,iperf3,{params},2026-12-01T10:00:00Z,\n")
    assert main(["import", str(tmp_path / "m.csv"), "--campaign", "old", "--dry-run"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert ("PARAM_MISMATCH: reverse echoed as 1" in err) is mismatch, err
