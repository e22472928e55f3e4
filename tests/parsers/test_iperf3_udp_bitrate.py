"""The iperf3 template's UDP rate (review hC leftover 4): its bitrate defaulted to 0, unlimited, and UDP has no
congestion control, so a UDP campaign that named no rate flooded: on loopback (iperf3 3.12, 3 runs) 49-53 Gbit/s
sent, 4.2-6.2 received, 88-91 % of the datagrams lost (at 100M: none lost), and throughput_mbps measured the
receiver's drops, a pod-vs-host ratio the two sides' drops. Now a UDP run must name its rate (an explicit 0 floods on
purpose); the template refuses one that does not, saying why. The template's own argv is run on the real iperf3 on
loopback (podtax.netpair starts the server, as a host run does)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from podtax import templates
from podtax.parsers import parse_run
from podtax.template_params import UDP_BITRATE


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_udp_run_without_a_bitrate_is_refused_saying_why(tmp_path: Path) -> None:
    with pytest.raises(templates.TemplateError) as caught:  # before: argv with -b 0, a flood
        templates.get("iperf3").build_argv({"protocol": "udp", "duration": 1, "port": _free_port()},
                                           workdir=str(tmp_path))
    assert UDP_BITRATE in str(caught.value), caught.value
    assert "protocol udp needs a bitrate" in UDP_BITRATE and "or 0 to flood on purpose" in UDP_BITRATE
    assert templates.get("iperf3").validate({"protocol": "udp", "bitrate": "0"}).bitrate == "0"  # as asked
    assert templates.get("iperf3").validate({}).bitrate == "0"  # TCP: unlimited, as before


@pytest.mark.parametrize("params", [{"protocol": "udp", "bitrate": "100M"}, {"protocol": "tcp"}])
def test_the_templates_argv_runs_on_the_real_iperf3_at_the_rate_it_names(params: dict[str, str],
                                                                          tmp_path: Path) -> None:
    template = templates.get("iperf3")
    run = {**params, "duration": 1, "port": _free_port()}
    argv = template.build_argv(run, workdir=str(tmp_path))
    assert argv[argv.index("-b") + 1] == run.get("bitrate", "0")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    parsed = parse_run("iperf3", proc.stdout, proc.stderr, proc.returncode, template.validate(run).model_dump())
    assert parsed.flags == (), parsed.flags  # no PARAM_MISMATCH: iperf3's target_bitrate is the one asked
    assert parsed.metric("throughput_mbps").value > 0
