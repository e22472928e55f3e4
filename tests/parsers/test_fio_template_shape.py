"""fio runs of another shape than the template's (audit hG): a real `--numjobs=2 --group_reporting` JSON report
gives one job entry whose read_iops (61k) is the sum of 2 jobs, and a report without `--direct` ran buffered
page-cache I/O; with params `direct=true` (the template's default, one job) podtax stored both unflagged, so an
import joined the template's cell. Now, with params given, several jobs and another `direct` than requested
(fio's default 0 when the report echoes none) are flagged PARAM_MISMATCH. Real captures tests/corpus-found."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
PARAMS = {"rw": "randread", "bs": "4k", "iodepth": 1}
CASES = {  # (capture, requested direct): the PARAM_MISMATCH keys expected
    ("fio-3.33-randread-numjobs2-grouped.json", "false"): ["jobs"],
    ("fio-3.33-randread-numjobs2-grouped.json", "true"): ["jobs", "direct"],
    ("fio-3.33-randread-buffered.json", "true"): ["direct"],
    ("fio-3.33-randread-buffered.json", "false"): [],
}


@pytest.mark.parametrize(("name", "direct"), sorted(CASES))
def test_another_shape_is_a_param_mismatch(name: str, direct: str) -> None:
    parsed = parse_run("fio", (FOUND / name).read_text(), requested={**PARAMS, "direct": direct})
    keys = [f.split(":")[1].split()[0] for f in parsed.flags if f.startswith("PARAM_MISMATCH: ")]
    assert keys == CASES[(name, direct)], parsed.flags


def test_without_params_nothing_is_compared() -> None:
    parsed = parse_run("fio", (FOUND / "fio-3.33-randread-numjobs2-grouped.json").read_text())
    assert parsed.metric("read_iops").value == pytest.approx(61415.584416) and not parsed.flags
