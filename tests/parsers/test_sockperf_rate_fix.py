"""A sockperf run not paced at the cell's rate is flagged PARAM_MISMATCH; the flag must say how to fix it.

Before, the flag ended 'the run was not paced at that rate, so its round trips measure another cell' and named no
option or parameter, with the rate written `--mps 1,000` (a form sockperf refuses). Now it names the option to rerun
with, as sockperf takes it (`--mps 1000`; `--pps` is the same option), and the cell's `rate` parameter. The real
capture tests/corpus-net/sockperf-pp-tcp-64-pps2000.log (`--pps 2000 -t 2`, COMMANDS.tsv) is paced at 2,000/s: read
for a cell of rate 2000 it is not flagged, for one of rate 1000 it is."""

from __future__ import annotations

from pathlib import Path

from podtax.parsers import parse_run

NET = Path(__file__).resolve().parents[1] / "corpus-net"


def test_a_pps_run_at_the_cells_rate_is_not_flagged() -> None:
    got = parse_run("sockperf", (NET / "sockperf-pp-tcp-64-pps2000.log").read_text(), requested={"rate": 2000})
    assert not any(f.startswith("PARAM_MISMATCH") for f in got.flags), got.flags
    assert got.values()["sent_messages_per_second"] > 1500


def test_the_rate_flag_names_the_option_and_the_parameter_to_fix_it() -> None:
    got = parse_run("sockperf", (NET / "sockperf-pp-tcp-64-pps2000.log").read_text(), requested={"rate": 1000})
    flag = next(f for f in got.flags if f.startswith("PARAM_MISMATCH: rate: "))
    assert flag.startswith("PARAM_MISMATCH: rate: sockperf sent 2,000 messages a second, over the requested rate "
                           "of 1,000 messages a second: the run was not paced at that rate"), flag
    assert "--mps 1," not in flag, flag  # a form sockperf refuses: the option only in the advice, `--mps 1000`
    assert "rerun it with `--mps 1000`" in flag, flag
    assert "`rate` parameter" in flag and "0 for an unpaced run" in flag, flag
