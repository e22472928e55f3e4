"""fio 1.5x and early 2.0.x print each job's I/O count as `issued r/w/d: total=0/354/0, short=0/0/0`
(tests/corpus-found/, sources in its README). The text parser read only `issued rwts`/`rwt`/`r/w`/`    :`, so it
found no `issued` line in these reports and refused them as cut after `IO depths`; now it reads the count, and a
whole figure under 1000 is that count over the runtime as for the later versions (one of 1000 and more too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"


def _values(name: str) -> dict[str, float]:
    return parse_text((FOUND / name).read_text(encoding="utf-8"), "fio").values()


def test_fio_1_59_report_with_issued_r_w_d_is_read() -> None:
    values = _values("fio-1.59-seq-read-libaio-text.log")
    assert values["read_iops"] == pytest.approx(464361 * 1000 / 60001)  # printed `iops=7739 ,`: 7739.22
    assert values["read_clat_mean"] == pytest.approx(509.75)


def test_fio_1_57_few_iops_is_its_issued_count_over_its_runtime() -> None:
    values = _values("fio-1.57-write-sync-5-jobs-text.log")
    assert values["write_iops"] == pytest.approx(354 * 1000 / 10136)  # printed `iops=34`: 34.925
    assert "read_iops" not in values
