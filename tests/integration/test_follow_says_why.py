"""`podtax campaign status --follow` on a campaign whose runs failed says why (fault scenario: a benchmark running
past its timeout): it said only 'campaign slow finished with 2 failed run(s) (exit status 3)', the reason and its
fix stored by the analyzer and said in no command. Real nats-server, runner, host agent running real sysbench,
parser and analyzer, the real CLI."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from podtax.cli.failed_runs import reasons
from podtax.cli.main import main as cli

from tests.integration.harness import submitted_campaign

SPEC = """name: slow
nodes: [n1]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {threads: 1, max_prime: 2000, events: 1000000000, time: 20}
repetitions: {min: 2, max: 2}
timeout: 1
"""


def _failed(port: int) -> int:
    try:
        rows = httpx.get(f"http://127.0.0.1:{port}/api/runs", params={"campaign": "slow", "status": "failed"},
                         timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return 0
    return len(rows)


async def test_follow_names_the_reason_runs_failed_and_its_fix(nats_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    async with submitted_campaign(nats_url, tmp_path, monkeypatch, SPEC, "n1") as sub:
        deadline = time.monotonic() + 120  # the analyzer runs on this loop: asked from a thread
        while await asyncio.to_thread(_failed, sub.port) < 2:
            assert time.monotonic() < deadline, "the analyzer did not store both failures"
            await asyncio.sleep(0.2)
        code = await asyncio.to_thread(cli, ["campaign", "status", "slow", "--follow", "--timeout", "120"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3, err
    assert ("error: campaign slow finished with 2 failed run(s) (exit status 3): 2 timeout: sysbench-cpu on n1 was "
            "killed after its timeout of 1 s; raise the campaign's `timeout:` (seconds) or lighten the parameters") \
        in err, err


def test_reasons_most_frequent_first_cancelled_left_out() -> None:
    rows = [{"failure_reason": "timeout", "failure_detail": "killed at 1 s"},
            {"failure_reason": "tool-missing", "failure_detail": "install sysbench"},
            {"failure_reason": "tool-missing", "failure_detail": "install sysbench on n2"},
            {"failure_reason": "cancelled", "failure_detail": "campaign cancelled"},
            {"failure_reason": None, "failure_detail": None}]
    assert reasons(rows) == ["2 tool-missing: install sysbench", "1 timeout: killed at 1 s", "1 unknown"]


async def test_follow_keeps_its_exit_status_when_the_analyzers_address_is_malformed(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A PODTAX_API_URL without a scheme (a typo `campaign status` itself never needs) made the reasons' look-up
    end the command with exit 2 (api_url's refusal), the 'finished with N failed run(s)' line lost: the analyzer
    cannot be asked, so no reason is said, and the status and its line stay."""
    async with submitted_campaign(nats_url, tmp_path, monkeypatch, SPEC, "n1"):
        monkeypatch.setenv("PODTAX_API_URL", "analyzer:8700")
        code = await asyncio.to_thread(cli, ["campaign", "status", "slow", "--follow", "--timeout", "120"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3, err
    assert err.endswith("error: campaign slow finished with 2 failed run(s) (exit status 3)"), err
