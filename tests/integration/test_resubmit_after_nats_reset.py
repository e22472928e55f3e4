"""A campaign submitted again under its name after a NATS reset (review hR6): run ids are made of the campaign's
name and the cell, the runner's KV (which refuses a name it holds) is lost with the store, the analyzer's DuckDB
is not, and the analyzer keeps the first result of a run id. So the second campaign's results for every cell the
two share were silently dropped in favour of the earlier measurements. `podtax campaign submit` now asks the
analyzer and refuses such a name in one line (exit 2). When the analyzer it knows of (PODTAX_API_URL) does not
answer it refuses too (one line, exit 1, naming --skip-analyzer-check): it said so in one warning line and
submitted, and the two submissions' runs mixed in the analyzer's cells. With --skip-analyzer-check it submits,
warns, and the analyzer says in one error line that the campaign was submitted again.

Real nats-servers (a second one, empty, stands for the reset store), runner, host agent running sysbench, parser
and analyzer in this process, the real CLI."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from podtax import natsserver

from tests.faults.drill import wait_header
from tests.integration.harness import run_cli, services, stream_messages, submitted_campaign, wait_for
from tests.integration.test_submit import know_node

NODE = "n1"
SPEC = f"""name: again
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {{threads: 1, max_prime: 2000, events: 0, time: 1}}
repetitions: {{min: 2, max: 2}}
timeout: 40  # a 1 s run and at least 30 s for its start-up (campaign: start_slack)
"""


async def test_a_campaign_submitted_again_after_a_nats_reset_is_refused_or_said(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    async with submitted_campaign(nats_url, tmp_path, monkeypatch, SPEC, NODE) as campaign:
        await wait_header(campaign.bus, "again", lambda h: h.get("finished_at"), 120, "the campaign to finish")
        ok_runs = "SELECT count(*) FROM runs WHERE campaign = 'again' AND status = 'ok'"
        await wait_for(lambda: campaign.services.query(ok_runs)[0][0] == 2, 30, "the campaign's two results stored")
    port, spec = campaign.port, str(campaign.spec)
    capsys.readouterr()

    reset = natsserver.start(tmp_path / "jetstream-after-reset", log_file=tmp_path / "nats-after-reset.log")
    try:
        monkeypatch.setenv("PODTAX_NATS_URL", reset.url)
        async with services(reset.url, tmp_path) as s:  # the same DuckDB file
            await s.analyzer(port)
            await know_node(reset.url, NODE, host_agent=True)
            await wait_for(lambda: s.query("SELECT 1"), 30, "the analyzer's DuckDB open")
            before = await stream_messages(reset.url)
            assert await run_cli("campaign", "submit", spec) == 2
            out, err = capsys.readouterr()
            assert [line.startswith("error: ") for line in err.splitlines()].count(True) == 1, err  # one line
            assert ("campaign 'again' already has results in the analyzer at" in err and "(2 ok, 0 failed: an "
                    "earlier submission, e.g. before a NATS reset)" in err and "choose another name" in err), err
            assert await stream_messages(reset.url) == before

            monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{natsserver.free_port()}")  # nothing there
            with caplog.at_level(logging.ERROR, logger="podtax.analyzer.store"):
                assert await run_cli("campaign", "submit", spec) == 1
                err = capsys.readouterr().err
                errors = [line for line in err.splitlines() if line.startswith("error: ")]
                assert len(errors) == 1 and errors[0].startswith("error: could not check the analyzer at "), err
                assert "runs would mix in its cells" in err and "--skip-analyzer-check" in err, err
                assert await stream_messages(reset.url) == before  # nothing published
                assert await run_cli("campaign", "submit", spec, "--skip-analyzer-check") == 0
                err = capsys.readouterr().err
                checked = [line for line in err.splitlines() if "could not check the analyzer at" in line]
                assert len(checked) == 1 and checked[0].startswith("warning: "), err
                assert "for an earlier campaign 'again'" in checked[0] and "error" not in err, err
                said = await wait_for(lambda: [r.getMessage() for r in caplog.records
                                               if "submitted again" in r.getMessage()], 30,
                                      "the analyzer's line on the campaign submitted again")
            assert len(said) == 1 and said[0].startswith("campaign again submitted again (at "), said
            assert "submit it under another name" in said[0]
            assert s.query("SELECT count(*) FROM campaigns WHERE campaign = 'again'")[0][0] == 1
    finally:
        reset.stop()
