"""The cross-node summary of imported campaigns. An audit imported two nodes' logs (12 runs a side, pod 10%
slower on both): both cells said `slower`, yet the summary gave no figure ("Excluded: pn-two-a (IMPORTED);
pn-two-b (IMPORTED)"), so a campaign made by `podtax import` never got one. A cell every run of which was
imported now counts, and the sentence says so; a cell that mixes imported runs with runs podtax made is still
left out, named as mixed. Each campaign's raw logs and results are stored as events in a real DuckDB file (an
imported run's log carries `imported_from`, as `podtax import` publishes it); the report comes from the real
CLI asking the real analyzer app."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2024, 3, 1, 10, tzinfo=UTC)
N = 12


def _events(campaign: str, node: str, imported: dict[str, bool], seed: int) -> list[events.Envelope]:
    """N host and N pod runs of one cell, pod 10% slower; the runs of env E imported when imported[E]."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(2 * N):
        env = ("host", "kubernetes")[i % 2]
        value = 1000.0 * (0.9 if env == "kubernetes" else 1.0) * float(np.exp(rng.normal(0, 0.003)))
        run = events.RunSpec(run_id=f"{campaign}-{node}-{i}", campaign=campaign, node=node, env=env,
                             test="sysbench-cpu", params={"threads": 1}, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(days=seed, minutes=2 * i)  # no campaign overlaps another on a node
        log = events.RawLog(run=run, stdout="(log)", exit_code=0, started_at=start,
                            ended_at=start + timedelta(seconds=10), tool_version="1.0.20",
                            imported_from=f"{node}/{i}.log" if imported[env] else None)
        res = events.Result(run=run, tool="sysbench", parser_version="1", tool_version="1.0.20",
                            metrics=[events.Metric(name="events_per_second", value=value, unit="events/s",
                                                   higher_is_better=True)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out += [events.raw_log(log, "test"), events.result(res, "test")]
    return out


ALL = {"host": True, "kubernetes": True}
NONE = {"host": False, "kubernetes": False}
# campaign: per node, which sides were imported -> (nodes in the figure, excluded nodes and reasons, caveat names)
CASES = {
    "two-nodes-imported": ({"pn-a": ALL, "pn-b": ALL}, ["pn-a", "pn-b"], {}, "pn-a, pn-b"),
    "made-by-podtax": ({"pn-a": NONE, "pn-b": NONE}, ["pn-a", "pn-b"], {}, None),
    # one node imported, one podtax ran: each cell compares like with like, so both count
    "one-node-each-way": ({"pn-a": ALL, "pn-b": NONE}, ["pn-a", "pn-b"], {}, "pn-a"),
    # imported host runs against pod runs podtax made, or imported runs added to podtax's on a side: mixed
    "mixed-sides": ({"pn-a": ALL, "pn-b": {"host": True, "kubernetes": False}}, ["pn-a"],
                    {"pn-b": ["IMPORTED mixed with runs podtax made"]}, "pn-a"),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The URL of the analyzer app serving every case's campaign."""
    store = Store(tmp_path_factory.mktemp("imported") / "podtax.duckdb")
    for k, (campaign, (nodes, *_)) in enumerate(CASES.items()):
        batch = [e for j, (node, imported) in enumerate(nodes.items())
                 for e in _events(campaign, node, imported, seed=10 * k + j)]
        store.write_batch(batch)
    with serve(create_app(store)) as url:
        yield url
    store.close()


@pytest.mark.parametrize("campaign", sorted(CASES))
def test_imported_cells_get_a_figure_across_nodes_unless_mixed(reports, campaign, capsys):
    _, included, excluded, caveat = CASES[campaign]
    capsys.readouterr()
    assert main(["report", campaign, "--json", "--api", reports]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert all(c["verdict"] == "slower" for c in rep["cells"]), [c["sentence"] for c in rep["cells"]]
    (item,) = [s for s in rep["summary"] if s["metric"] == "events_per_second"]
    assert (item["nodes_included"], item["nodes_excluded"]) == (included, excluded), item["sentence"]
    assert item["geomean_ratio"] == pytest.approx(0.9, abs=0.01)
    assert "no clean cell" not in item["sentence"]
    said = f"Every run of {caveat} was imported from logs recorded outside podtax"
    assert (said in item["sentence"]) == (caveat is not None), item["sentence"]
    if excluded:
        assert "Excluded: pn-b (IMPORTED mixed with runs podtax made)." in item["sentence"], item["sentence"]
