"""Every `podtax campaign` command with NATS down and a short PODTAX_CLI_TIMEOUT, through the real entry point:
the connection gives up before the command's deadline, so the one line says NATS cannot be reached (status and
cancel said "NATS did not answer within 2 s", as submit did before commit 92009e2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

DEAD = "nats://127.0.0.1:9"  # the discard port: nothing listens there
CAMPAIGN = "name: gone\nnodes: [n1]\nenvironments: [host]\ntests:\n  - test: sysbench-cpu\n"

COMMANDS = [  # id, argv ({file}: a valid campaign file)
    ("submit", ["campaign", "submit", "{file}"]),
    ("status", ["campaign", "status", "gone"]),
    ("status --follow", ["campaign", "status", "gone", "--follow", "--timeout", "5"]),
    ("cancel", ["campaign", "cancel", "gone", "--wait", "0"]),
]


@pytest.mark.parametrize("argv", [c[1] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_dead_nats_is_named_unreachable_before_the_deadline(argv: list[str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    monkeypatch.setenv("PODTAX_NATS_URL", DEAD)
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))
    assert main([a.format(file=tmp_path / "c.yaml") for a in argv]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"cannot reach NATS at {DEAD}" in lines[0], err
    assert "did not answer" not in lines[0]
