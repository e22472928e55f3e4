"""`podtax import` into a campaign podtax ran (a real nats-server, runner, host agent running real sysbench,
parser and analyzer in this process, the real CLI). The import mixed its runs into the campaign's cells
unseen (a cell went from 6 to 7 host runs, its ratio moved, and the report said nothing). It is now
refused in one line unless --into-existing; then each cell with imported runs is flagged IMPORTED with
how many, in `podtax report` and the HTML report."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import pytest

from tests.faults.drill import wait_header
from tests.integration.harness import run_cli, submitted_campaign, wait_for

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NODE = "n1"
PARAMS = {"threads": 1, "max_prime": 20000, "events": 0, "time": 1}  # what the corpus log ran, but 1 s
SPEC = f"""name: ran
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {json.dumps(PARAMS)}
repetitions: {{min: 2, max: 2}}
timeout: 40  # a 1 s run and at least 30 s for its start-up (campaign: start_slack)
"""
ROW = ("file,node,env,test,params,started_at,tool_version\n"
       f"old.log,{NODE},host,sysbench-cpu,{' '.join(f'{k}={v}' for k, v in PARAMS.items())},2024-03-01T10:00:00Z,\n")


async def test_importing_into_a_campaign_podtax_ran_is_refused_then_flagged(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the log ran 2 s, not 1: its run is flagged PARAM_MISMATCH too, which does not matter here
    shutil.copyfile(CORPUS / "debian12-x86_64/sysbench-cpu-default-time.log", tmp_path / "old.log")
    manifest = tmp_path / "m.csv"
    manifest.write_text(ROW)
    async with submitted_campaign(nats_url, tmp_path, monkeypatch, SPEC, NODE) as campaign:
        s, port = campaign.services, campaign.port
        await wait_header(campaign.bus, "ran", lambda h: h.get("finished_at"), 120, "the campaign to finish")
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign = 'ran'")[0][0] == 2, 30,
                       "the campaign's two runs stored")
        capsys.readouterr()

        assert await run_cli("import", str(manifest), "--campaign", "ran") == 2
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and "campaign 'ran' was run by podtax" in err and "--into-existing" in err, err
        assert "Traceback" not in out + err
        await asyncio.sleep(1.5)
        assert s.query("SELECT count(*) FROM raw_logs WHERE imported_from IS NOT NULL")[0][0] == 0

        assert await run_cli("import", str(manifest), "--campaign", "ran", "--into-existing") == 0
        assert "adding imported runs to campaign 'ran'" in capsys.readouterr().err
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign = 'ran'")[0][0] == 3, 30,
                       "the imported run stored")
        assert await run_cli("report", "ran", "--json") == 0
        report = json.loads(capsys.readouterr().out)
        cell = next(c for c in report["cells"] if c["metric"] == "events_per_second")
        assert cell["n_host"] == 3 and "IMPORTED" in cell["flags"]
        assert cell["flag_details"]["IMPORTED"].startswith(
            "Imported from logs recorded outside podtax (`podtax import`): 1 of 3 host runs. podtax made the "
            "other runs")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            html = (await http.get("/report/ran")).text
        assert "IMPORTED" in html and "1 of 3 host runs" in html

        assert await run_cli("import", str(manifest), "--campaign", "old") == 0  # a campaign podtax never ran
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign = 'old'")[0][0] == 1, 30,
                       "the run imported into a new campaign")
        capsys.readouterr()
        assert await run_cli("report", "old", "--json") == 0
        cell = next(c for c in json.loads(capsys.readouterr().out)["cells"] if c["metric"] == "events_per_second")
        assert cell["flag_details"]["IMPORTED"] == ("Imported from logs recorded outside podtax (`podtax import`): "
                                                    "1 of 1 host run. podtax ran none of this cell's runs.")
