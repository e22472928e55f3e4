"""A param an import row leaves out (left-out of stop 35): iperf3 takes a missing `bitrate` as the template's 0
(unlimited), fio compares `direct` only when the row gives it. Checked, both are right and stay as they are:
- a cap bounds the figure: a UDP run without `-b` sends at iperf3's 1 Mbit/s on both sides, so its host and
  pod throughputs are the cap (1.05 Mbit/s each) and their ratio would read "no loss"; the run is flagged
  PARAM_MISMATCH and not counted, as a sysbench run held to `--rate` is whatever its params say;
- `direct` only picks what is measured (the page cache or the device), both real figures: an import row
  that names no `direct` compares buffered runs with buffered runs, and its cell (params keyed as written)
  never joins a template cell, which names `direct=true`.
Through the import's own check (importcheck.parse_log), on real captures (tests/corpus-net, corpus-found)."""

from __future__ import annotations

from pathlib import Path

from podtax.cli.importcheck import parse_log

TESTS = Path(__file__).resolve().parents[1]
UDP_NO_B = TESTS / "corpus-net" / "iperf3-udp-no-b-1s.json"  # `iperf3 -u -t 1 -J`: target_bitrate 1048576
BUFFERED = TESTS / "corpus-found" / "fio-3.33-randread-buffered.json"  # no --direct: fio's default 0


def _mismatches(path: Path, test: str, params: dict[str, object]) -> list[str]:
    check = parse_log(test, path.read_text(encoding="utf-8"), params)
    assert check.failure is None, check.failure
    return [f.split(":")[1].split()[0] for f in check.flags if f.startswith("PARAM_MISMATCH: ")]


def test_an_imported_udp_run_at_the_default_cap_is_flagged_without_a_bitrate_param() -> None:
    assert _mismatches(UDP_NO_B, "iperf3", {"protocol": "udp", "duration": 1}) == ["bitrate"]
    assert _mismatches(UDP_NO_B, "iperf3", {"protocol": "udp", "duration": 1, "bitrate": "1M"}) == ["bitrate"]


def test_an_imported_fio_run_is_compared_on_direct_only_when_the_row_names_it() -> None:
    params = {"rw": "randread", "bs": "4k", "iodepth": 1}
    assert _mismatches(BUFFERED, "fio", params) == []
    assert _mismatches(BUFFERED, "fio", {**params, "direct": "false"}) == []
    assert _mismatches(BUFFERED, "fio", {**params, "direct": "true"}) == ["direct"]
