"""stress-ng as older distributions ship it, built from ColinIanKing/stress-ng's tags and run with the template's
options (tests/corpus-found/README.md): 0.11.07 (Ubuntu 20.04) prints its table under `info:`, `%12.2f` for the last
column (`%14.2f` from 0.12), `successful run completed` before the table, and its YAML has no
cpu-usage-per-instance (0.12) nor max-rss (0.14); 0.12.06 (Debian 11) adds `CPU used per instance (%)` to --metrics
and the YAML. Figures are the row's, as printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
ROW = ("bogo_ops", "real_time", "usr_time", "sys_time", "bogo_ops_per_second_real", "bogo_ops_per_second_usr_sys")
CASES = [("stress-ng-0.11.07-cpu-1-matrixprod.log", {"threads": 1, "method": "matrixprod", "timeout": 2},
          (251, 2.00, 1.25, 0.00, 125.28, 200.80), ()),
         ("stress-ng-0.11.07-cpu-2-ops.log", {"threads": 2, "method": "matrixprod", "timeout": 2, "ops": 500},
          (248, 2.02, 1.26, 0.00, 123.03, 196.83),
          ("SHORT: stress-ng ran 248 of the 500 requested bogo ops before its timeout",)),
         ("stress-ng-0.11.07-cpu-1.yaml", {"threads": 1, "timeout": 2},
          (109, 2.006098, 1.26, 0.0, 54.334334, 86.507937), ()),
         ("stress-ng-0.12.06-cpu-1-matrixprod.log", {"threads": 1, "method": "matrixprod", "timeout": 2},
          (251, 2.00, 1.30, 0.00, 125.31, 193.08), ()),
         ("stress-ng-0.12.06-cpu-2-metrics.log", {"threads": 2, "method": "matrixprod", "timeout": 2},
          (318, 2.00, 1.63, 0.00, 158.66, 195.09), ()),
         ("stress-ng-0.12.06-cpu-2-metrics.yaml", {"threads": 2, "timeout": 2},
          (318, 2.004228, 1.63, 0.0, 158.664546, 195.092025), ())]


@pytest.mark.parametrize(("name", "params", "row", "flags"), CASES)
def test_an_old_stress_ng_row_reads_as_printed(name: str, params: dict[str, object], row: tuple[float, ...],
                                                flags: tuple[str, ...]) -> None:
    parsed = parse_run("stress-ng-cpu", (FOUND / name).read_text(encoding="utf-8"), "", 0, params)
    assert tuple(parsed.metric(m).value for m in ROW) == row
    assert parsed.flags == flags


def test_a_0_12_yaml_of_two_instances_is_flagged_for_one_thread() -> None:
    """0.12's YAML gives cpu-usage-per-instance (40.664027 for 1.63 s over 2.004228 s): 2 instances."""
    text = (FOUND / "stress-ng-0.12.06-cpu-2-metrics.yaml").read_text(encoding="utf-8")
    parsed = parse_run("stress-ng-cpu", text, "", 0, {"threads": 1, "timeout": 2})
    assert parsed.flags == ("THREADS_MISMATCH: the tool ran 2 threads, 1 were requested",)
    assert parsed.metric("cpu_used_per_instance").value == 40.664027
