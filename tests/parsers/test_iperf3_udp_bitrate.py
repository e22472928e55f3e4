"""The iperf3 template's UDP rate (review hC leftover 4): its bitrate defaulted to 0, unlimited, and UDP has no
congestion control, so a UDP campaign that named no rate flooded: on loopback (iperf3 3.12, 3 runs) 49-53 Gbit/s
sent, 4.2-6.2 received, 88-91 % of the datagrams lost (at 100M: none lost), and throughput_mbps measured the
receiver's drops, a pod-vs-host ratio the two sides' drops. Now a NEW campaign's UDP test must name its rate (an
explicit 0 floods on purpose): `campaign submit` (the campaign file) and the runner accepting a submission refuse one
that does not, saying why. Runs that already exist keep meaning -b 0 where no bitrate is given: a campaign the runner
stored before, a run it planned (the host agent builds its argv), a log imported (tests/integration/
test_import_dry_run), its params re-read by the parser and analyzer. The template's own argv is run on the real
iperf3 on loopback (podtax.netpair starts the server, as a host run does)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from podtax import campaign, templates
from podtax.parsers import parse_run
from podtax.template_params import UDP_BITRATE

OLD = {"name": "u", "nodes": ["n"], "tests": [{"test": "iperf3", "params": {"protocol": "udp"}}]}
NEW = "name: u\nnodes: [n]\ntests:\n  - test: iperf3\n    params: {protocol: udp, duration: 1}\n"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("text", "where"), [
    (NEW, "c.yaml:5: tests.0.params.protocol: "),
    (NEW.replace("params: {protocol: udp, duration: 1}", "matrix: {protocol: [tcp, udp]}"),
     "c.yaml:5: tests.0.matrix.protocol: "),
], ids=["params", "matrix"])
def test_a_new_udp_campaign_without_a_bitrate_is_refused_saying_why(text: str, where: str) -> None:
    with pytest.raises(campaign.CampaignError) as caught:  # before 41eb9ed: planned with -b 0, a flood
        campaign.parse(text, "c.yaml")
    assert f"{where}{UDP_BITRATE}" in str(caught.value), caught.value
    assert "protocol udp needs a bitrate" in UDP_BITRATE and "or 0 to flood on purpose" in UDP_BITRATE
    with pytest.raises(ValueError, match="protocol udp needs a bitrate"):  # the runner, accepting a submission
        campaign.Campaign.model_validate(OLD)
    for rate in ("100M", "0"):  # as asked; 0 floods on purpose
        given = text.replace("duration: 1}", f"duration: 1, bitrate: '{rate}'}}").replace(
            "matrix: {protocol: [tcp, udp]}", f"params: {{bitrate: '{rate}'}}\n    matrix: {{protocol: [tcp, udp]}}")
        assert campaign.parse(given, "c.yaml").tests[0].test == "iperf3"
    assert campaign.parse(NEW.replace("udp", "tcp"), "c.yaml").tests[0].params == {"protocol": "tcp", "duration": 1}


def test_what_exists_already_keeps_bitrate_0_where_none_is_given(tmp_path: Path) -> None:
    """A campaign stored before (the runner reloads it with STORED), a run it planned (the host agent validates it
    by building its argv), params re-read (parser, analyzer): refused before this, now -b 0 as they ran."""
    stored = campaign.Campaign.model_validate(OLD, context=campaign.STORED)
    assert stored.tests[0].params == {"protocol": "udp"}
    argv = templates.get("iperf3").build_argv({"protocol": "udp", "duration": 1}, workdir=str(tmp_path))
    assert argv[argv.index("-b") + 1] == "0" and "-u" in argv
    assert templates.get("iperf3").validate({"protocol": "udp"}).bitrate == "0"
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
