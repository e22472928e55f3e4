"""Small messages a new-user audit found, through the real CLI entry point: a campaign timeout with a unit says
it is in seconds; too few repetitions for a verdict are warned of (podtax.flags.MIN_RUNS a side); an unknown test
gets "did you mean"; manifest params separated by ';' say params are space-separated key=value pairs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from podtax.cli.main import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CAMPAIGN = "name: small\nnodes: [n1]\nenvironments: [host]\ntests:\n  - test: {test}\n{extra}"
ROW = "file,node,env,test,params,started_at,tool_version\na.log,n1,host,{test},{params},2024-03-01T10:00:00Z,\n"


@pytest.fixture(autouse=True)
def _no_nats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # nobody there: dry runs check all else


@pytest.mark.parametrize(("test", "extra", "code", "line"), [
    ("sysbench-cpu", "timeout: 2m\n", 2, "c.yaml:6: timeout: '2m': the timeout is a number of seconds: write 120"),
    ("sysbench-cpu", "timeout: 1.5h\n", 2, "timeout: '1.5h': the timeout is a number of seconds: write 5400"),
    ("sysbench_cpu", "", 2, "tests.0: unknown test 'sysbench_cpu' (did you mean 'sysbench-cpu'?); registered"),
    ("sysbench-cpu", "repetitions: {min: 3}\n", 0, "warning: repetitions: at most 3 run(s) a side per cell; a "
                                                   "verdict needs 6 a side"),
    ("sysbench-cpu", "repetitions: {min: 2, max: 8, target_ci_width: 0.05}\n", 0, None),
])
def test_campaign_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str], test: str, extra: str, code: int,
                           line: str | None) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.format(test=test, extra=extra))
    assert main(["campaign", "submit", str(path), "--dry-run"]) == code
    err = capsys.readouterr().err
    if line:
        assert line in err
    else:
        assert "repetitions" not in err


@pytest.mark.parametrize(("test", "params", "line"), [
    ("sysbench-cpu", "threads=1;max_prime=20000", "line 2: params: params are space-separated key=value pairs "
                                                  "(threads=1 max_prime=20000), got 'threads=1;max_prime=20000'"),
    ("sysbench_cpu", "threads=1", "line 2: unknown test 'sysbench_cpu' (did you mean 'sysbench-cpu'?)"),
])
def test_manifest_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str], test: str, params: str,
                           line: str) -> None:
    shutil.copyfile(CORPUS / "debian12-x86_64/sysbench-cpu-prime100000-1t.log", tmp_path / "a.log")
    manifest = tmp_path / "m.csv"
    manifest.write_text(ROW.format(test=test, params=params))
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 2
    assert line in capsys.readouterr().err
