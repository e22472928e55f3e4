"""fio's cpuio engine burns CPU and does no I/O (fio 3.33 on this project's Debian 12 VM, sweep hB). fio prints
`cpu (noop): ioengine=cpuio, cpuload=50, cpucycle=50000` on stdout, then a report whose `issued rwts: total=10,...`
counts its loops as reads without bytes: the JSON report's read block has `total_ios` 10, `io_bytes` 0, `runtime`
0, `iops` 0. The JSON was read as read_iops 0 and read_bw 0 KiB/s (a wrong figure: the slowest machine), the text
refused as damaged ("issued read I/O but has no `read:` line"), and a cpuio job beside an I/O job (CPU load under
the I/O) refused the text and added a zero-rate job to the JSON. The other captures were read right and were not
in the corpus: each figure equals the one the log prints."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, fio, parse_text

from tests.parsers.test_found_captures import CORPUS, parse

CPUIO = "cpu (noop): ioengine=cpuio, cpuload=50, cpucycle=50000"


@pytest.mark.parametrize("name", ["fio-3.33-cpuio.json", "fio-3.33-cpuio-text.log"])
def test_a_cpuio_run_alone_is_refused_as_no_io_not_as_zero_or_damaged(name: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert failure.value.reason == "unknown-format"
    assert "does no I/O" in failure.value.detail and CPUIO in failure.value.detail
    assert "damaged" not in failure.value.detail


def test_a_cpuio_json_cut_from_its_noop_line_still_names_the_engine() -> None:
    text = (CORPUS / "fio-3.33-cpuio.json").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match=r"does no I/O \(`ioengine=cpuio`\)"):
        fio.parse(text[text.index("{"):])


def test_an_io_job_beside_a_cpuio_job_in_text_reads_the_io_job_and_flags_the_load() -> None:
    parsed = parse("fio-3.33-io-beside-cpuio-text.log")
    values = parsed.values()
    assert {k: values[k] for k in ("read_iops", "read_bw", "read_clat_min", "read_clat_mean", "read_clat_max",
                                   "read_clat_p50", "read_clat_p99_99")} == pytest.approx({
        "read_iops": 10366e3 / 1002, "read_bw": 40.4 * 1024, "read_clat_min": 13, "read_clat_mean": 95.96,
        "read_clat_max": 11840, "read_clat_p50": 65, "read_clat_p99_99": 10028}, rel=1e-12)  # `IOPS=10.3k`
    assert not any(k.startswith("burn") for k in values)
    assert parsed.echoed["ioengine"] == "psync"
    assert any(f.startswith("PARAM_MISMATCH: ioengine:") and "burn (noop)" in f for f in parsed.flags)


def test_an_io_job_beside_a_cpuio_job_in_json_has_no_zero_rate_job() -> None:
    parsed = parse("fio-3.33-io-beside-cpuio.json")
    values = parsed.values()
    assert values["read_iops"] == values["io_read_iops"] == 12508.491508
    assert values["read_bw"] == values["io_read_bw"] == 50033
    assert values["io_read_clat_mean"] == pytest.approx(79.226748742)
    assert values["io_read_clat_p50"] == pytest.approx(49.92)
    assert not any(k.startswith("burn") for k in values)
    assert "ioengine" not in parsed.echoed  # the io job echoes none (psync by default); cpuio's is not its
    assert any(f.startswith("PARAM_MISMATCH: ioengine:") for f in parsed.flags)


def test_a_job_without_its_direction_line_and_no_noop_header_is_still_damaged() -> None:
    text = (CORPUS / "fio-3.33-io-beside-cpuio-text.log").read_text(encoding="utf-8").replace(CPUIO.replace(
        "cpu", "burn", 1), "")
    with pytest.raises(ParseFailure, match="the log is damaged"):
        parse_text(text, "fio")


@pytest.mark.parametrize(("name", "expected"), [
    # `Description  : [host baseline run]` between the job line and its figures
    ("fio-3.33-description-text.log", {"read_iops": 6096e3 / 1001, "read_bw": 23.8 * 1024, "read_clat_min": 48,
                                       "read_clat_mean": 163.34, "read_clat_max": 10262, "read_clat_p50": 69,
                                       "read_clat_p99_99": 10290}),
    # `BW=36.0TiB/s` and `clat (nsec)` of the null engine with 16 MiB blocks
    ("fio-3.33-null-16M-tib-text.log", {"read_iops": 2380100e3 / 1010, "read_bw": 36.0 * 1024 ** 3,
                                        "read_clat_min": 0.014,
                                        "read_clat_mean": 0.04952, "read_clat_max": 12078, "read_clat_p50": 0.017,
                                        "read_clat_p99_99": 0.163}),
    # `--percentile_list=50:99.5:99.999`: `| 50.000th=[   69], 99.500th=[ 4424], 99.999th=[10552]`
    ("fio-3.33-percentile-list-text.log", {"read_iops": 5480e3 / 1001, "read_bw": 21.4 * 1024, "read_clat_min": 45,
                                           "read_clat_mean": 181.77, "read_clat_max": 10529, "read_clat_p50": 69,
                                           "read_clat_p99_5": 4424, "read_clat_p99_999": 10552}),
    # `--slat_percentiles=1 --lat_percentiles=1`: a `slat percentiles` block before clat's (not read as clat)
    ("fio-3.33-slat-percentiles-libaio-text.log", {"read_iops": 14295e3 / 1001, "read_bw": 55.8 * 1024,
                                                   "read_clat_min": 1.266, "read_clat_mean": 210.24347,
                                                   "read_clat_max": 4990.6, "read_clat_p1": 143, "read_clat_p50": 159,
                                                   "read_lat_p1": 192}),
    # `--ss=iops:50%`: stopped at steady state after 897 ms, a `steadystate  : attained=yes` line
    ("fio-3.33-steadystate-text.log", {"read_iops": 7303e3 / 897, "read_bw": 31.8 * 1024, "read_clat_min": 48,
                                       "read_clat_mean": 122.09, "read_clat_max": 7652, "read_clat_p50": 70,
                                       "read_clat_p99_99": 7635}),
])
def test_unusual_text_reports_read_as_printed(name: str, expected: dict[str, float]) -> None:
    """As printed, but IOPS: its `issued` I/Os over its runtime, which fio printed cut (`IOPS=6089` for 6096 in
    1001 ms)."""
    values = parse(name).values()
    assert {k: values[k] for k in expected} == pytest.approx(expected)
    assert "read_slat_p1" not in values


@pytest.mark.parametrize("name", ["fio-3.33-group-reporting-io-and-cpuio.json",
                                  "fio-3.33-group-reporting-io-and-cpuio-text.log"])
def test_a_cpuio_job_within_a_reported_group_is_refused(name: str) -> None:
    """group_reporting: the cpu job's 10 loops are in the group's read IOPS=109 (JSON 109.89), which were read as
    the io job's, flagged as if the cpu job were left out. JSON written with --output (no `(noop)` line) too: its
    job's options are the cpu job's."""
    text = (CORPUS / name).read_text(encoding="utf-8")
    for log in (text, text[text.index("{"):]) if name.endswith(".json") else (text,):
        with pytest.raises(ParseFailure) as failure:
            parse_text(log, "fio")
        assert failure.value.reason == "unknown-format"
        assert "does no I/O" in failure.value.detail and "group_reporting" in failure.value.detail
        assert "new_group or stonewall" in failure.value.detail


def test_an_output_file_json_flags_the_cpuio_job_from_its_options() -> None:
    """fio prints the `(noop)` line only on stdout: an --output= JSON says cpuio in the job's options only."""
    parsed = parse("fio-3.33-io-beside-cpuio-output-file.json")
    assert parsed.values()["read_iops"] == parsed.values()["io_read_iops"] == 11726.273726
    assert not any(k.startswith("cpu_") for k in parsed.values())
    assert any(f.startswith("PARAM_MISMATCH: ioengine:") and "`cpu: ioengine=cpuio`" in f for f in parsed.flags)


def test_an_output_file_text_refusal_names_a_no_io_engine() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("fio-3.33-io-beside-cpuio-output-file-text.log")
    assert "fio job cpu issued read I/O but has no `read:` line" in failure.value.detail
    assert "engine does no I/O, as cpuio" in failure.value.detail and "--output=" in failure.value.detail


def test_a_job_whose_name_ends_a_no_io_job_name_is_still_damaged_without_its_direction_line() -> None:
    """`cpu (noop): ioengine=` was looked for as `u (noop): ioengine=`'s superstring: job `u`, its read block lost,
    was taken for a no-I/O job and read as no job."""
    text = (CORPUS / "fio-3.33-io-beside-cpuio-text.log").read_text(encoding="utf-8")
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("io: (groupid="))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("bw ("))
    damaged = "\n".join(lines[:start + 1] + lines[end:]).replace("io: (g", "o: (g").replace("burn", "bio")
    with pytest.raises(ParseFailure, match="fio job o issued read I/O but has no `read:` line"):
        parse_text(damaged, "fio")


@pytest.mark.parametrize(("name", "words"), [
    ("fio-3.33-cpuio-output-file.json", "engine does no I/O (`ioengine=cpuio`) and no other"),
    ("fio-3.33-cpuio-output-file-text.log", "engine does no I/O, as cpuio"),
])
def test_a_cpuio_job_alone_written_with_output_is_refused_naming_the_engine(name: str, words: str) -> None:
    """Real captures (hA): no `(noop)` line in the file; never a zero rate, the refusal says why."""
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert failure.value.reason == "unknown-format" and words in failure.value.detail, failure.value.detail
