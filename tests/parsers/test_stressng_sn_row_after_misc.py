"""A stress-ng `--sn` table row that follows a `miscellaneous metrics:` block is a row, whatever the log's length.

stress-ng's parser reads a log three ways: line by line (stressng._line), a log under 8 KiB in the common form in
one regex pass (stressng_forms.plain_lines), and a longer one with its table rows and misc metrics matched in C
(stressng._ROW, stressng._MISC). _line reads a row among misc metrics as a row; the two fast ways read an `--sn`
one (`matrix  200 9.392e-02 2.371e-02 ...`) as a misc metric named after its figures
(`matrix_9_392e_02_..._2868 = 200`), and flagged the row MISSING.

The samples are REBUILT, not captured: stress-ng 0.15.06 (`--sn` with `--metrics` or `--metrics-brief`, two
stressors, `--sequential` too) prints every row before one misc block. Each moves a real row of
tests/corpus/debian12-x86_64/stress-ng-matrix-1-sn.log (or of a real 0.15.06 `--cpu 1 --matrix 1 --sn --metrics`
run) after the misc block header, the shape a log of other runs' lines interleaved (or a future layout) shows.
"""

from __future__ import annotations

import pytest
from podtax.parsers import parse_text

_P = "stress-ng: metrc: [24103] "
_I = "stress-ng: info:  [24103] "
_HEADER = (_P + "stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s CPU used per"
                "       RSS Max\n"
           + _P + "                          (secs)    (secs)    (secs)   (real time) (usr+sys time) instance (%)"
                  "          (KB)\n")
_MATRIX = _P + ("matrix              200 9.392e-02 2.371e-02 0.000e+00  2.12941e+03    8.43526e+03      2.5244e+01"
                "          2868\n")
_CPU = _P + ("cpu                1218 2.001e+00 5.417e-01 1.426e-02  6.08546e+02    2.19070e+03      2.7779e+01"
             "          6516\n")
_ADD = _P + "matrix             3.86e+05 add matrix ops per sec (geometic mean of 1 instances)\n"
_END = _I + "successful run completed in 0.12s\n"

SAMPLES = {
    # hG2's repro: the row is the only line of the misc block
    "row alone": (_I + "dispatching hogs: 1 matrix\n", _P + "miscellaneous metrics:\n" + _MATRIX + _END),
    # the whole table, the matrix row after the header, a misc metric and the cpu row
    "row after a misc metric": (_I + "dispatching hogs: 1 cpu, 1 matrix\n",
                                _HEADER + _P + "miscellaneous metrics:\n" + _ADD + _MATRIX + _CPU + _END),
}


def _chatter(lines: int) -> str:
    return "".join(f"{_I}stream: memory rate: {i}\n" for i in range(lines))


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_an_sn_row_after_a_misc_block_is_a_row_short_or_long(sample: str) -> None:
    head, tail = SAMPLES[sample]
    results = {}
    for lines in (0, 60, 300):  # under 2 KiB (line by line), 2 to 8 KiB (plain_lines), over 8 KiB (_ROW/_MISC)
        text = head + _chatter(lines) + tail
        parsed = parse_text(text, "stress-ng")
        metrics = {m.name: m.value for m in parsed.metrics}
        prefix = "" if "cpu" not in head else "matrix_"
        assert metrics[prefix + "bogo_ops"] == 200, (len(text), metrics)
        assert metrics[prefix + "bogo_ops_per_second_real"] == 2129.41, (len(text), metrics)
        assert metrics[prefix + "rss_max"] == 2868, (len(text), metrics)
        assert not [name for name in metrics if "e_0" in name], (len(text), metrics)  # no metric named after figures
        assert not [flag for flag in parsed.flags if flag.startswith("MISSING")], (len(text), parsed.flags)
        results[lines] = (metrics, parsed.flags)
    assert results[0] == results[60] == results[300]


def test_a_misc_metric_whose_description_starts_with_a_figure_is_still_a_misc_metric() -> None:
    """What the fast ways now leave to _line (a description starting as a number does) _line still reads as
    a misc metric when the line is no row: the same metric short or long."""
    line = _P + "matrix             271 -3 dB gain (geometic mean of 1 instances)\n"
    tail = _HEADER + _MATRIX + _P + "miscellaneous metrics:\n" + line + _END
    got = []
    for lines in (0, 60, 300):
        metrics = {m.name: m.value for m in parse_text(_I + "dispatching hogs: 1 matrix\n" + _chatter(lines) + tail,
                                                       "stress-ng").metrics}
        assert metrics["bogo_ops"] == 200
        got.append({name: value for name, value in metrics.items() if value == 271})
    assert got[0] == got[1] == got[2] and len(got[0]) == 1, got
