"""`podtax report` asks the analyzer for a control-plane campaign's phase table with the CLI's bearer token,
as it asks for the comparison: an analyzer whose reads need the token (PODTAX_API_READS_NEED_TOKEN) served
the comparison and answered the phase table with 401, and the report silently had no phase table. Through
`main`, the real entry point, against the real analyzer app served over HTTP (conftest.serve)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from podtax.cli import common, report_phases
from podtax.cli.main import main
from podtax_analyzer.api import create_app

from tests.report.conftest import Served, serve

TOKEN = "report-phases-token-0123456789"


@pytest.fixture(scope="module")
def locked(served: Served) -> Iterator[str]:
    """The same campaigns, from an analyzer whose reads need the token."""
    with serve(create_app(served.store, TOKEN, reads_need_token=True)) as url:
        yield url


@pytest.fixture
def no_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No PODTAX_API_TOKEN and no `podtax up` token file: the CLI has no token unless a test gives one."""
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    monkeypatch.setattr(common, "DATA_DIR", tmp_path)
    return tmp_path


def _phases(out: str) -> set[str]:
    return {r["phase"] for r in json.loads(out)["phase_table"]["rows"]}


def test_report_sends_the_token_for_the_phase_table(locked: str, no_token: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
    assert main(["report", "cp", "--api", locked, "--json"]) == 0
    assert _phases(capsys.readouterr().out) == {"provisioned"}  # the campaign's one phase cell
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", "cp", "--api", locked]) == 0
    out = capsys.readouterr().out
    assert "Control-plane phases, side by side" in out and "the PV's ADDED event" in out

    # the token `podtax up` wrote, read from its up.json as every other command reads it (for its own analyzer)
    monkeypatch.delenv("PODTAX_API_TOKEN")
    (no_token / "api-token").write_text(TOKEN + "\n")
    up = {"api_url": locked, "api_token_file": str(no_token / "api-token")}
    (no_token / common.UP_FILE).write_text(json.dumps(up))
    assert main(["report", "cp", "--api", locked, "--json"]) == 0
    assert _phases(capsys.readouterr().out) == {"provisioned"}


def test_phase_table_refused_or_unreachable_is_one_clear_line(locked: str, served: Served, no_token: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as refused:
        report_phases.from_api(locked, "cp", 0.01, "holm")
    err = capsys.readouterr().err
    assert refused.value.exit_code == 1 and "401" in err and "PODTAX_API_TOKEN" in err and "phase table" in err
    with pytest.raises(typer.Exit) as unreachable:
        report_phases.from_api("http://127.0.0.1:9", "cp", 0.01, "holm")
    assert unreachable.value.exit_code == 1
    assert "cannot reach the analyzer at http://127.0.0.1:9" in capsys.readouterr().err
    # an analyzer that serves no phase table for it (404): no table, no error
    assert report_phases.from_api(served.url, "no-such-campaign", 0.01, "holm") is None
    assert report_phases.from_api(served.url, "cp", 0.01, "holm")["rows"]  # open reads need no token
