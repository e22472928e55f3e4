"""sockperf 3.10 (upstream, as Fedora 39 and 40 ship; Debian 12 and Ubuntu 24.04 ship 3.7), built from
Mellanox/sockperf's tag and run with the template's options against its own server (tests/corpus-found/README.md):
the average line carries 3.8's extended statistics after the std-dev, in colour codes. Figures are the printed
ones; the rate is received messages over the valid duration (1549 / 1.548 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = [("sockperf-3.10-pp-udp-mps1000-full-rtt.log", {"duration": 2, "msg_size": 64, "rate": 1000, "protocol": "udp"},
          {"rtt_avg_us": 65.842, "rtt_stddev_us": 425.135, "rtt_p50_us": 15.072, "rtt_p99_9_us": 4159.508,
           "rtt_min_us": 12.097, "rtt_max_us": 9179.006, "messages_per_second": 1549 / 1.548}),
         ("sockperf-3.10-pp-tcp-full-rtt.log", {"duration": 1, "msg_size": 64, "protocol": "tcp"},
          {"rtt_avg_us": 25.922, "rtt_stddev_us": 179.601, "rtt_p50_us": 16.514, "rtt_p99_99_us": 5328.519,
           "rtt_min_us": 13.65, "rtt_max_us": 7231.54, "messages_per_second": 21364 / 0.555})]


@pytest.mark.parametrize(("name", "params", "figures"), CASES)
def test_sockperf_3_10_reads_as_printed(name: str, params: dict[str, object], figures: dict[str, float]) -> None:
    parsed = parse_run("sockperf", (FOUND / name).read_text(), "", 0, params)
    assert parsed.tool_version == "3.10-built" and parsed.echoed["protocol"] == params["protocol"]
    values = parsed.values()
    assert {k: values[k] for k in figures} == pytest.approx(figures, rel=1e-12)
    assert all(f.startswith("FEW_OBSERVATIONS") for f in parsed.flags), parsed.flags  # 1 s or 2 s runs: p99.999
