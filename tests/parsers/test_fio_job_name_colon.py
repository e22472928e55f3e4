"""A fio job named with a colon (`--name=rr:4k`, as scripts name a job after its mode and block size), fio 3.33 on
this project's Debian 12 VM (sweep hB). The text reader took a job's name as everything up to its first colon, so
`rr:4k: (groupid=0, jobs=1): err= 0: ...` was no job report and the log was refused as "fio stopped before any job
reported its figures: vda: ios=..." (the disk stats line quoted as fio's last words); its header line was not
echoed either. The JSON report of the same job was read right."""

from __future__ import annotations

import pytest

from tests.parsers.test_found_captures import parse


def test_a_job_named_with_a_colon_reads_as_printed() -> None:
    parsed = parse("fio-3.33-name-colon-text.log")
    values = parsed.values()
    assert {k: values[k] for k in ("read_iops", "read_bw", "read_clat_min", "read_clat_mean", "read_clat_max")} == \
        pytest.approx({"read_iops": 11313e3 / 1004, "read_bw": 44.0 * 1024, "read_clat_min": 33,
                       "read_clat_mean": 87.93, "read_clat_max": 4893}, rel=1e-12)  # `IOPS=11.3k`: its issued / ms
    assert parsed.echoed == {"rw": "randread", "bs": "4096B", "ioengine": "psync", "iodepth": 1}


def test_the_json_report_of_a_colon_named_job_names_the_same_figures() -> None:
    text, json = parse("fio-3.33-name-colon-text.log"), parse("fio-3.33-name-colon.json")
    assert {m.name for m in text.metrics} == {m.name for m in json.metrics}
    assert json.values()["read_iops"] == pytest.approx(11523.476523)


def test_two_jobs_of_a_colon_name_are_both_counted() -> None:
    """`--numjobs=2`: two reports `rr:4k: (groupid=0, jobs=1)`; both started, both reported, summed."""
    values = parse("fio-3.33-name-colon-numjobs2-text.log").values()
    assert values["rr_4k_0_read_iops"] == pytest.approx(17358e3 / 1001)  # `IOPS=17.3k`: its issued / ms
    assert values["rr_4k_1_read_iops"] == pytest.approx(17506e3 / 1004)  # `IOPS=17.4k`
    assert values["read_iops"] == pytest.approx(17358e3 / 1001 + 17506e3 / 1004)
    assert values["read_bw"] == pytest.approx((67.7 + 68.1) * 1024)
