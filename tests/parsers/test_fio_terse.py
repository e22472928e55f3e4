"""fio's terse output (`--minimal`, `--output-format=terse`, `--terse-version=2|3|4|5`) is read into the metrics the
JSON report of the same run gives (podtax.parsers.fio_terse). It was refused (`unknown-format`, "rerun with
--output-format=json"), while users hand in `--minimal` logs. Real captures (tests/corpus-found/fio-3.33-terse-*,
commands in its README): fio 3.33 with `--output-format=json,terse` prints the run's terse lines and then its JSON
report, so each terse figure is checked against the JSON figure of the SAME run, within the rounding terse applies
(IOPS and whole-µs latencies cut down to an integer, means to 6 decimals of a µs, bandwidth the same integer)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from podtax.cli.main import main
from podtax.parsers import ParseFailure, fio_terse, parse_run, parse_text
from podtax.parsers.fio_terse import LINE, TERSE_FLAG

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
BOTH = ["randread", "randrw", "write", "randrw-v2", "randrw-v4", "randrw-v5", "numjobs2", "numjobs2-grouped",
        "unified", "unifiedboth", "twogroups", "tmpfs-numjobs2", "seminame"]
TOTALS = ("read_", "write_", "trim_", "mixed_", "group")  # a total's name (several jobs: each job's is prefixed)
PARAMS = {"rw": "randread", "bs": "4k", "iodepth": 1, "direct": "true"}  # the template's, direct as it requests


def _capture(name: str) -> str:
    return (FOUND / f"fio-3.33-terse-{name}.log").read_text()


def _split(text: str) -> tuple[str, str]:
    """(the terse lines, the rest: fio's stderr and JSON report) of a `json,terse` log."""
    lines = text.splitlines(keepends=True)
    terse = [line for line in lines if LINE.match(line)]
    return "".join(terse), "".join(line for line in lines if not LINE.match(line))


def _within_terse_rounding(name: str, json_value: float, terse_value: float, summed: int) -> bool:
    """`summed`: how many jobs' figures a total of IOPS adds (each cut down), else 1."""
    if name.endswith("_bw"):  # both fio's integer KiB/s
        return terse_value == json_value
    if name.endswith("_clat_mean"):  # `%f` of the mean in µs
        return abs(terse_value - json_value) <= 1e-6
    if summed > 1:
        return terse_value.is_integer() and 0 <= json_value - terse_value < summed
    return terse_value == math.floor(json_value + 1e-9)  # IOPS and whole µs: cut down (`/ 1000` in integers)


@pytest.mark.parametrize("name", BOTH)
def test_terse_figures_are_the_json_figures_of_the_same_run(name: str) -> None:
    terse, rest = _split(_capture(f"{name}-json-terse"))
    assert terse.count("\n") >= 1
    for tool in (None, "fio"):
        try:
            expected = parse_text(rest, tool)
        except ParseFailure as failure:  # two groups under the template's name: no total stands for the run
            with pytest.raises(ParseFailure) as terse_failure:
                parse_text(terse, tool)
            assert (terse_failure.value.reason, terse_failure.value.detail) == (failure.reason, failure.detail)
            assert name == "twogroups" and tool == "fio"
            continue
        assert "TERSE_OUTPUT" not in " ".join(expected.flags)
        parsed = parse_text(terse, tool)
        got = {m.name: m for m in parsed.metrics}
        want = {m.name: m for m in expected.metrics}
        assert list(got) == list(want)
        for key, metric in want.items():
            assert (got[key].unit, got[key].higher_is_better) == (metric.unit, metric.higher_is_better), key
            summed = terse.count("\n") if key.endswith("_iops") and key.startswith(TOTALS) else 1
            assert _within_terse_rounding(key, metric.value, got[key].value, summed), (key, metric.value,
                                                                                       got[key].value)
        assert parsed.flags == (TERSE_FLAG, *expected.flags)
        assert parsed.tool_version == (None if name == "randrw-v2" else "3.33")
        assert parsed.echoed == {}


def test_several_directions_groups_and_jobs_are_named_as_in_json() -> None:
    names = {n: {m.name for m in parse_text(_split(_capture(f"{n}-json-terse"))[0]).metrics} for n in BOTH}
    assert {"read_iops", "write_iops"} <= names["randrw"] and "trim_iops" not in names["randrw-v4"]
    assert {"mixed_iops", "read_iops", "write_iops"} <= names["unifiedboth"]
    assert {"mixed_iops"} == {n for n in names["unified"] if n.endswith("_iops")}
    assert {"t_0_read_iops", "t_1_read_iops", "read_iops"} <= names["numjobs2"]
    assert {"group0_read_iops", "group1_write_iops", "r_read_iops", "w_write_iops"} <= names["twogroups"]


@pytest.mark.parametrize("name", ["randread-minimal", "randread-json-terse"])
def test_the_podtax_parse_command_reads_a_terse_log(name: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "fio-minimal.log"
    log.write_text(_split(_capture(name))[0])
    assert main(["parse", "--json", str(log)]) == 0
    [item] = json.loads(capsys.readouterr().out)
    assert item["tool"] == "fio" and item["tool_version"] == "3.33" and item["flags"] == [TERSE_FLAG]
    figures = {m["name"]: m for m in item["metrics"]}
    line = log.read_text().split(";")
    assert figures["read_iops"] == {"name": "read_iops", "value": float(line[7]), "unit": "IOPS",
                                    "higher_is_better": True}
    assert figures["read_bw"]["value"] == float(line[6]) and figures["read_clat_mean"]["value"] == float(line[15])
    assert main(["parse", "--tool", "fio", str(log)]) == 0
    assert "read_iops" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["error-minimal", "error-json-terse"])
def test_a_job_error_fails_as_in_json_quoting_fios_stderr(name: str) -> None:
    with pytest.raises(ParseFailure) as in_json:
        parse_text(_split(_capture("error-json-terse"))[1])
    stderr_and_terse = "".join(line for line in _capture(name).splitlines(keepends=True)
                               if LINE.match(line) or not line.startswith((" ", "{", "}")))
    assert ";22;" in stderr_and_terse
    with pytest.raises(ParseFailure) as in_terse:
        parse_text(stderr_and_terse)
    assert (in_terse.value.reason, in_terse.value.detail) == (in_json.value.reason, in_json.value.detail)
    assert in_terse.value.reason == "fatal" and "error 22: t: you need to specify size=" in in_terse.value.detail


def test_no_param_mismatch_from_options_terse_does_not_echo() -> None:
    """The template requests direct=true and bs=4k: terse echoes neither, so nothing is compared (a JSON report
    echoing no `direct` is flagged, fio's default being buffered I/O: that is not this case)."""
    parsed = parse_run("fio", _capture("randread-minimal"), requested=PARAMS)
    assert not [f for f in parsed.flags if f.startswith("PARAM_MISMATCH")] and TERSE_FLAG in parsed.flags
    several = parse_run("fio", _split(_capture("numjobs2-json-terse"))[0], requested=PARAMS)
    assert [f.split()[1] for f in several.flags if f.startswith("PARAM_MISMATCH")] == ["jobs:"]  # as JSON's
    with pytest.raises(ParseFailure, match="asked for rw=randwrite but reports no write I/O"):
        parse_run("fio", _capture("randread-minimal"), requested={**PARAMS, "rw": "randwrite"})


def test_normal_text_beside_terse_lines_is_read_as_before() -> None:
    """`--output-format=terse,normal`: the normal report (it echoes rw and bs) is read, as it was."""
    parsed = parse_text(_capture("randread-terse-normal"))
    assert parsed.flags[0].startswith("TEXT_OUTPUT") and parsed.echoed["rw"] == "randread"


def test_a_cut_terse_line_is_refused_or_read_whole_never_another_figure() -> None:
    line = _capture("randread-minimal").rstrip("\n")
    whole = parse_text(line).metrics
    fixed = len(";".join(line.split(";")[:5 + 2 * 41 + 34]))  # the fields read or checked: header to distributions
    for cut in range(len("3;fio-3.33;t;0;0;5"), len(line)):
        try:
            metrics = parse_text(line[:cut], "fio").metrics
        except ParseFailure as failure:
            assert failure.reason in ("truncated", "unknown-format") and cut < fixed, cut
            assert "fio" in failure.detail
            continue
        assert cut >= fixed and metrics == whole, cut


@pytest.mark.parametrize(("field", "garbage", "words"), [
    (6, "5x129", "not a figure"), (15, "nan", "not a figure"), (9, "-1", "not a figure"),
    (20, "20.000000%62", "no percentile"), (20, "abc%=62", "not a percentile"), (3, "zero", "terse groupid"),
    (4, "22x", "terse error"), (88, "0.4", "cut short or damaged")])
def test_a_damaged_terse_field_is_a_clear_failure(field: int, garbage: str, words: str) -> None:
    fields = _capture("randread-minimal").rstrip("\n").split(";")
    fields[field] = garbage
    with pytest.raises(ParseFailure, match=words) as failure:
        parse_text(";".join(fields), "fio")
    assert failure.value.reason in ("truncated", "unknown-format")


def test_a_terse_line_with_a_direction_block_too_many_is_refused() -> None:
    fields = _capture("randread-minimal").rstrip("\n").split(";")
    extra = fields[:5] + fields[5:5 + 41] * 3 + fields[5 + 2 * 41:]  # version 3 prints 1, 2 or 3 blocks
    assert parse_text(";".join(extra), "fio").metrics  # 3: read, write, mixed (unified_rw_reporting=both)
    with pytest.raises(ParseFailure, match="4 direction blocks"):
        parse_text(";".join(fields[:5] + fields[5:5 + 41] * 4 + fields[5 + 2 * 41:]), "fio")


def test_terse_lines_of_two_fio_versions_are_two_runs() -> None:
    line = _capture("randread-minimal")
    with pytest.raises(ParseFailure, match="several fio versions"):
        parse_text(line + line.replace("fio-3.33", "fio-3.36"), "fio")


def test_status_interval_lines_are_refused_not_summed_as_jobs() -> None:
    """`--status-interval=1 --minimal` prints job t's line after each second, cumulative: summed as 3 jobs, the read
    IOPS would be 23,349 for a job that did 7,627."""
    with pytest.raises(ParseFailure, match="status-interval") as failure:
        parse_text(_capture("status-interval-minimal"))
    assert failure.value.reason == "unknown-format" and "28616 KiB in 893 ms" in failure.value.detail


def test_runs_appended_to_one_log_are_refused_not_summed_as_jobs() -> None:
    """`fio --minimal >> log` twice: read as numjobs' clones, the read IOPS were summed (21,693 for runs of 12,135
    and 9,558; three copies of one run's line, 38,178 for 12,726). The lines of one run end with the same disk use;
    those of two runs differ there, or, where fio prints no disk use, are the same byte for byte only if copied."""
    with pytest.raises(ParseFailure, match="several fio runs appended in one log: its terse lines end with "
                                           "different disk use.*split it, one run per log") as failure:
        parse_text(_capture("appended2-minimal"), "fio")
    assert failure.value.reason == "unknown-format"
    line = _capture("randread-minimal")
    with pytest.raises(ParseFailure, match="several fio runs appended.*same byte for byte"):
        parse_text(line * 3)
    no_disk = line.replace(";vda;" + line.split(";vda;")[1], "\n")  # as on tmpfs: no disk use
    with pytest.raises(ParseFailure, match="several fio runs appended.*same byte for byte"):
        parse_text(no_disk * 2)


@pytest.mark.parametrize("name", ["numjobs2-json-terse", "numjobs2-grouped-json-terse", "twogroups-json-terse",
                                  "unifiedboth-json-terse", "tmpfs-numjobs2-json-terse", "randrw-v2-json-terse"])
def test_the_lines_of_one_run_are_one_run(name: str) -> None:
    """numjobs=2 (two lines, the same disk use), group_reporting, two groups, unified reporting, a run on tmpfs
    (numjobs=2, no disk use: the lines differ) and version 2 (no disk use) are read, one line a job (their
    figures: test_terse_figures_are_the_json_figures_of_the_same_run)."""
    terse = _split(_capture(name))[0]
    assert len(fio_terse.document(terse)["jobs"]) == terse.count("\n") >= 1


def test_numjobs_clones_that_failed_alike_fail_with_their_error() -> None:
    """numjobs=2 on a new file without size: two lines alike byte for byte (nothing moved), fio's error 22 told."""
    text = _capture("error-numjobs2-minimal")
    assert len(set(fio_terse.LINE.findall(text))) == 1 and text.count("\n3;fio-3.33;t;0;22;") == 2
    with pytest.raises(ParseFailure, match="error 22") as failure:
        parse_text(text)
    assert failure.value.reason == "fatal"


def test_a_write_jobs_verify_reads_are_left_out_when_a_write_mode_is_asked() -> None:
    """`--rw=write --verify=crc32c --output-format=json,terse`: the terse line's read block is the verify pass
    (170,666 IOPS of reads from the page cache). JSON echoes `verify` and leaves it out (VERIFY); terse echoes no
    option, so the template's rw tells: a write mode leaves the reads out and flags VERIFY as JSON does."""
    terse, rest = _split(_capture("write-verify-json-terse"))
    asked = {"rw": "write"}
    expected, parsed = parse_run("fio", rest, requested=asked), parse_run("fio", terse, requested=asked)
    assert [f for f in expected.flags if f.startswith("VERIFY")]
    assert parsed.flags == (TERSE_FLAG, *expected.flags)
    assert [m.name for m in parsed.metrics] == [m.name for m in expected.metrics]
    assert not [m for m in parsed.metrics if m.name.startswith("read")]
    for got, want in zip(parsed.metrics, expected.metrics, strict=True):
        assert _within_terse_rounding(got.name, want.value, got.value, 1), got.name
    for other in ({"rw": "randrw"}, None):  # reads asked for, or nothing asked: the reads are the workload's
        kept = parse_run("fio", terse, requested=other)
        assert "read_iops" in {m.name for m in kept.metrics} and not [f for f in kept.flags if "VERIFY" in f]


def test_the_flag_says_lat_percentiles_are_read_as_clat() -> None:
    """`--lat_percentiles=1`: terse prints the total latency's percentiles where it prints clat's; they are named
    clat_p* (terse cannot tell), and TERSE_OUTPUT says so."""
    terse, rest = _split(_capture("lat-percentiles-json-terse"))
    parsed, expected = parse_text(terse, "fio"), {m.name: m.value for m in parse_text(rest, "fio").metrics}
    percentiles = {m.name: m.value for m in parsed.metrics if "_clat_p" in m.name}
    assert len(percentiles) == 17
    for name, value in percentiles.items():
        assert value == math.floor(expected[name.replace("_clat_", "_lat_")]), name
    assert "--lat_percentiles=1 the clat_p* figures are the total latency's percentiles" in parsed.flags[0]


def test_a_version_2_line_after_fios_stderr_note_is_recognized() -> None:
    """A version 2 line names no fio: it was recognized only at the log's start, and fio's stderr note before it
    (`note: both iodepth >= 1 and synchronous I/O engine are selected`) hid it: no tool recognized."""
    text = _capture("v2-note-minimal")
    assert text.startswith("note: both iodepth") and "\n2;t;0;0;" in text
    parsed = parse_text(text)
    assert parsed.tool == "fio" and parsed.flags == (TERSE_FLAG,)
    assert {m.name: m.value for m in parsed.metrics}["read_iops"] == float(text.split("\n2;")[1].split(";")[5])
    with pytest.raises(ParseFailure, match="no sysbench"):  # a short `2;` line of anything else is no fio line
        parse_text("note: x\n2;t;0;0;5;6\n")


def test_a_job_name_holding_a_semicolon_is_joined_back() -> None:
    """fio writes `--name='a;b'` raw (`3;fio-3.33;a;b;0;0;...`): the line was refused as damaged (131 fields)."""
    terse = _split(_capture("seminame-json-terse"))[0]
    assert terse.startswith("3;fio-3.33;a;b;0;0;")
    assert [job["jobname"] for job in fio_terse.document(terse)["jobs"]] == ["a;b"]


def test_a_trim_job_in_terse_version_3_says_version_3_prints_no_trim() -> None:
    """A randtrim job (falloc engine): terse version 3 prints read and write blocks only, all zero, and the failure
    said `total_ios is 0`, as if the job had done nothing; the JSON report of the same run has its trims."""
    terse, rest = _split(_capture("randtrim-falloc-json-terse"))
    assert "trim_iops" in {m.name for m in parse_text(rest, "fio").metrics}
    with pytest.raises(ParseFailure, match="version 3 prints no trim figures.*--terse-version=4") as failure:
        parse_text(terse, "fio")
    assert failure.value.reason == "unknown-format"


@pytest.mark.parametrize(("name", "why"), [("client-one-job", "disk use on a line of its own, `;vda;1280;"),
                                           ("client-two-jobs", "disk use on a line of its own, `;vda;1729;"),
                                           ("client-two-hosts", "disk use on a line of its own, `;vda;0;")])
def test_client_server_terse_output_is_refused_as_its_json_report_is(name: str, why: str) -> None:
    """`fio --client=localhost,PORT --output-format=terse` (fio 3.33 servers on this machine): the client prints each
    host's disk use on a line of its own and, for more than one job, an `All clients` line summing them all. Read as
    a run on the node, the jobs and `All clients` were summed (two hosts at 13837 and 21113 IOPS gave read_iops
    62625); fio's JSON report of such a run (`client_stats`) is refused, and so is its terse output now."""
    text = (FOUND / f"fio-3.33-terse-{name}.log").read_text()
    for tool in (None, "fio"):
        with pytest.raises(ParseFailure, match="client/server terse output") as failure:
            parse_text(text, tool)
        assert failure.value.reason == "unknown-format" and why in failure.value.detail
        assert "run fio on the node itself, one log per node" in failure.value.detail
    if name != "client-one-job":  # a host without disk stats (tmpfs) prints none: `All clients` still tells
        lines = text.splitlines(keepends=True)
        with pytest.raises(ParseFailure, match="client/server terse output .--client: an `All clients` line"):
            parse_text("".join(line for line in lines if not line.startswith(";")), "fio")


def test_a_disk_use_at_the_end_of_a_line_is_no_client_output() -> None:
    """A run on the node ends each job line with its disk use (`...;0.00%;vda;...;75.83%`): read as before."""
    line = _capture("randread-minimal")
    assert ";vda;" in line and parse_text(line, "fio").values()["read_iops"] > 0


@pytest.mark.parametrize("name", ["tmpfs-twogroups-appended2-minimal", "v2-twogroups-appended2-minimal"])
def test_runs_of_several_groups_appended_without_disk_use_are_refused(name: str) -> None:
    """Two stonewalled jobs (groups 0 and 1) on tmpfs, and in terse version 2: no disk use ends the lines, and the
    runs differ, so they read as one run of two clones per group (group0_read_iops the sum of both runs'). fio
    numbers its groups in job order and prints its jobs in that order: groupid going back (1 to 0) is a second run.
    Each run alone reads."""
    text = (FOUND / f"fio-3.33-terse-{name}.log").read_text()
    with pytest.raises(ParseFailure, match="several fio runs appended in one log: its terse lines go back from "
                                           "groupid 1 to 0.*split it, one run per log") as failure:
        parse_text(text, "fio")
    assert failure.value.reason == "unknown-format"
    second = text.index("\nr: (g=0)") + 1
    for run in (text[:second], text[second:]):
        assert len(fio_terse.document(run)["jobs"]) == 2
        assert parse_text(run).values()["group0_read_iops"] > 0
