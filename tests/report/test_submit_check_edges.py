"""`podtax campaign submit`'s check of the analyzer for an earlier campaign (podtax.cli.earlier.check_analyzer) at
its edges (review hR8): a name the analyzer holds no run of may go; an analyzer that does not answer is one refusal
(exit 1) within the command's deadline; a malformed count is a refusal, a warning with --skip-analyzer-check; the
local `podtax up` analyzer is not asked about a campaign sent to another NATS; the refusal and the warning are one
line. A real HTTP server on a free port answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import typer
from podtax.cli import common
from podtax.cli import deadline as cli_deadline
from podtax.cli.earlier import check_analyzer


async def _on(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, body: bytes | None) -> None:
    await reader.readuntil(b"\r\n\r\n")
    if body is None:  # accept and never answer
        await asyncio.sleep(3600)
        return
    writer.write(b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                 % (status, len(body), body))
    await writer.drain()
    writer.close()


@pytest.fixture
async def answering(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """A server answering every request with request.param (status, body); PODTAX_API_URL names it."""
    status, body = request.param
    server = await asyncio.start_server(lambda r, w: _on(r, w, status, body), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    monkeypatch.setenv("PODTAX_API_URL", url)
    monkeypatch.delenv("PODTAX_NATS_URL", raising=False)
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    yield url
    server.close()


def _campaign(**counts: object) -> tuple[int, bytes]:
    return 200, json.dumps({"name": "x", "cells": 0, "first_run_at": None, "last_run_at": None, **counts}).encode()


async def _exit_code(name: str = "x", skip: bool = False) -> int:
    try:
        await check_analyzer(name, skip=skip)
    except typer.Exit as exc:
        return exc.exit_code
    return 0


@pytest.mark.parametrize("answering", [_campaign(runs_ok=0, runs_failed=0, runs=0)], indirect=True)
async def test_a_name_with_no_run_recorded_may_be_submitted_again(
        answering: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the runner refused 'x' (too large, a template error, 0 runs) or a publish was retried: no run id to share
    assert await _exit_code() == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("answering", [_campaign(runs_ok=0, runs_failed=0, runs=3),
                                       _campaign(runs_ok=0, runs_failed=0)], indirect=True)
async def test_a_name_with_runs_or_an_answer_without_the_count_is_refused(
        answering: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert await _exit_code() == 2  # cancelled runs hold run ids; no `runs` (an older analyzer): as before
    assert "'x' was already submitted to the analyzer" in capsys.readouterr().err


@pytest.mark.parametrize("answering", [_campaign(runs_ok=None, runs_failed=0, runs=1),
                                       _campaign(runs_ok=1, runs_failed=0, runs="3")], indirect=True)
async def test_a_malformed_count_is_one_refusal_or_with_the_flag_one_warning(
        answering: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert await _exit_code() == 1  # the analyzer PODTAX_API_URL names could not be asked: their runs could mix
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"error: could not check the analyzer at {answering} "), err
    assert err.rstrip().endswith("or pass --skip-analyzer-check to submit unchecked"), err
    assert await _exit_code(skip=True) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"warning: could not check the analyzer at {answering} "), err


@pytest.mark.parametrize("answering", [(200, None)], indirect=True)
async def test_an_analyzer_that_does_not_answer_is_refused_within_the_deadline(
        answering: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "3")  # under the check's own 10 s: a third of it, 1 s, is the bound
    assert await cli_deadline.within(_exit_code(), "submitting campaign x") == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "(no answer within 1 s)" in err, err


@pytest.mark.parametrize("answering", [_campaign(runs_ok=12, runs_failed=0, runs=12)], indirect=True)
async def test_the_local_up_analyzer_is_not_asked_about_a_campaign_sent_to_another_nats(
        answering: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(common, "DATA_DIR", tmp_path)
    up = tmp_path / common.UP_FILE
    up.write_text(json.dumps({"api_url": answering, "nats_url": "nats://127.0.0.1:4222"}))
    monkeypatch.delenv("PODTAX_API_URL")
    assert await _exit_code() == 2  # NATS from the up record too: its analyzer is asked, and holds 'x'
    capsys.readouterr()
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://lab.example:4222")
    up.write_text("{broken")  # not read: a damaged up.json does not block a submit to another NATS
    assert await _exit_code() == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("warning: could not check an analyzer for an earlier "
                                                         "campaign 'x' (PODTAX_NATS_URL is set but not "), err
    assert "set PODTAX_API_URL to the analyzer to have it checked" in err, err


@pytest.mark.parametrize("answering", [(503, b'{"detail":"starting\\nagain"}')], indirect=True)
async def test_the_refusal_and_the_warning_are_one_line(answering: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert await _exit_code() == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(HTTP 503, " in err, err
    assert await _exit_code(skip=True) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(HTTP 503, " in err, err


@pytest.mark.parametrize("answering", [_campaign(runs_ok=12, runs_failed=0, runs=12)], indirect=True)
async def test_a_nats_url_naming_the_up_records_own_nats_still_asks_its_analyzer(
        answering: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(common, "DATA_DIR", tmp_path)
    (tmp_path / common.UP_FILE).write_text(json.dumps({"api_url": answering, "nats_url": "nats://127.0.0.1:4222"}))
    monkeypatch.delenv("PODTAX_API_URL")
    # the same server with the CLI's own user, in a list: the analyzer `podtax up` started serves this NATS
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://cli:secret@127.0.0.1:4222,nats://127.0.0.1:4223")
    assert await _exit_code() == 2
    assert "already has results" in capsys.readouterr().err
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:4224")  # another server: not asked
    assert await _exit_code() == 0
