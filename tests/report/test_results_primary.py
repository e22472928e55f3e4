"""`podtax results` shows each run's primary figure (audit hE, network): a sockperf run's row showed
`dropped_messages 0.00 count` and an iperf3 run's `cpu_local_percent` (the first metric, as only sysbench,
stress-ng and fio metrics were known), not the round trip or the throughput, and params printed Python's
`reverse=True` where the report and the scheduler's groups say `reverse=true`. Now the row takes the
template's primary metric and the canonical params text. Real corpus captures through the real parsers, a
real DuckDB file, the real analyzer app over HTTP and the real CLI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import events
from podtax.cli.main import main
from podtax.parsers import parse_run

from tests.report.conftest import serve_batches

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"
T0 = datetime(2026, 12, 1, 8, tzinfo=UTC)
RUNS = {  # test: (log, params, the figure the row must show)
    "sockperf": ("sockperf-pp-tcp-64-fullrtt.log", {"protocol": "tcp", "msg_size": 64, "duration": 2},
                 "rtt_p50_us"),
    "iperf3": ("iperf3-tcp-P2-reverse-2s.json", {"protocol": "tcp", "parallel": 2, "duration": 2, "reverse": True},
               "throughput_mbps"),
}


def _results() -> list[events.Envelope]:
    """One host run of each network test, its corpus capture parsed by the real parser."""
    batch = []
    for i, (test, (log, params, _)) in enumerate(RUNS.items()):
        parsed = parse_run(test, (CORPUS / log).read_text())
        run = events.RunSpec(run_id=f"net-{test}", campaign="net", node="node-1", env="host", test=test,
                             params=params, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(minutes=5 * i)
        res = events.Result(run=run, tool=test, tool_version=parsed.tool_version, parser_version="1",
                            metrics=[events.Metric(name=m.name, value=m.value, unit=m.unit,
                                                   higher_is_better=m.higher_is_better) for m in parsed.metrics],
                            started_at=start, ended_at=start + timedelta(seconds=2))
        batch.append(events.result(res, "test"))
    return batch


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with serve_batches(tmp_path_factory.mktemp("primary"), [_results()]) as served:
        yield served


def test_each_row_shows_its_primary_figure(url, monkeypatch, capsys):
    monkeypatch.setenv("PODTAX_API_URL", url)
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["results", "--campaign", "net"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for test, (_, _, metric) in RUNS.items():
        row = next(line for line in lines if f" {test} " in line)
        assert f" {metric} " in row, row
    iperf = next(line for line in lines if " iperf3 " in line)
    assert "reverse=true" in iperf and "reverse=True" not in iperf, iperf
