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


TEXT_CASES = {  # normal text captures (no --output-format): the PARAM_MISMATCH keys expected, the read_iops stored
    "fio-3.33-randread-numjobs2-grouped-text.log": (["jobs"], 48826e3 / 1002),  # `Starting 2 processes`, one `jobs=2`
    "fio-3.33-randread-numjobs2-text.log": (["jobs"], 23023e3 / 1001 + 22939e3 / 1001),  # two `jobs=1` reports, summed
    "fio-3.33-randread-lat-percentiles-only-text.log": ([], None),  # one job
}


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_a_text_report_of_several_jobs_is_a_param_mismatch(name: str) -> None:
    """The text reader never looked at the job count: a `--numjobs=2` run's summed IOPS passed for one job's with
    params given, where its JSON is flagged. Now it is, in the JSON's words (fio_flags.jobs_flag)."""
    expected, iops = TEXT_CASES[name]
    parsed = parse_run("fio", (FOUND / name).read_text(), requested={**PARAMS, "direct": "false"})
    keys = [f.split(":")[1].split()[0] for f in parsed.flags if f.startswith("PARAM_MISMATCH: ")]
    assert keys == expected, parsed.flags
    if iops is not None:
        assert parsed.metric("read_iops").value == pytest.approx(iops, rel=1e-12)  # `issued` / ms
        json_run = parse_run("fio", (FOUND / "fio-3.33-randread-numjobs2-grouped.json").read_text(),
                             requested={**PARAMS, "direct": "false"})
        assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: jobs: ")] == \
            [f for f in json_run.flags if f.startswith("PARAM_MISMATCH: jobs: ")]
    assert not [f for f in parse_run("fio", (FOUND / name).read_text()).flags if f.startswith("PARAM_MISMATCH")]
