"""fio counts a job direction's runtime in whole ms, rounded up (backend.c update_runtime: `(elapsed_us + 999) /
1000`), and divides its I/O by it: 16 null-engine reads of nanoseconds print `(64.0KiB/1msec)` and 16.0k IOPS,
and podtax passed such figures on unflagged, far too low. A runtime printed R ms ran over R - 1 ms, so the true
rate may be up to R / (R - 1) of the figure (without bound at 1 ms). Such runs are not refused (a 2 MiB write
ends in 1 ms and is a real run) but flagged ROUNDED_RUNTIME when that bound is over 5%: R <= 20 ms. Real
captures in tests/corpus-found (README, with the commands), JSON, text and terse."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from podtax import templates
from podtax.flags import ORDER
from podtax.parsers import parse_run, parse_text
from podtax.parsers.fio_flags import ROUNDED_MAX_MS, ROUNDED_SHARE

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
SHORT = {  # capture: (its job direction, the runtime fio printed for it, ms)
    "fio-3.33-null-64k-1ms.json": ("tiny read", 1),
    "fio-3.33-null-64k-1ms-text.log": ("tiny read", 1),
    "fio-3.33-null-64k-1ms-terse.log": ("tiny read", 1),
    "fio-3.33-write-16m-4ms.json": ("w16m write", 4),
    "fio-3.33-write-16m-3ms-text.log": ("w16m write", 3),
    "fio-3.33-write-16m-7ms-terse.log": ("w16m write", 7),
}
LONG = ("fio-3.33-write-256m-92ms.json", "fio-3.33-write-256m-97ms-text.log")


def _rounded(flags: tuple[str, ...]) -> list[str]:
    return [f for f in flags if f.startswith("ROUNDED_RUNTIME: ")]


def _iops_over_runtime(text: str) -> float:
    """The capture's IOPS from its own figures: I/Os over the runtime fio printed (what fio divides by)."""
    if text.startswith("{"):
        stats = next(s for s in (json.loads(text)["jobs"][0][d] for d in ("read", "write")) if s["total_ios"])
        return stats["total_ios"] * 1000 / stats["runtime"]
    if text.startswith("3;"):  # terse: KiB and runtime of the block that moved any (64 KiB blocks, 4 KiB for null)
        fields = text.split(";")
        kib, ms = (fields[5], fields[8]) if fields[5] != "0" else (fields[46], fields[49])
        return int(kib) / (4 if "tiny" in text else 64) * 1000 / int(ms)
    total = re.search(r"issued rwts: total=(\d+),(\d+)", text)
    assert total is not None
    return max(int(total.group(1)), int(total.group(2))) * 1000 / int(re.findall(r"/(\d+)msec\)", text)[0])


@pytest.mark.parametrize("name", sorted(SHORT))
def test_a_runtime_of_a_few_ms_is_flagged_with_its_bound_and_figures_kept(name: str) -> None:
    text = (FOUND / name).read_text()
    parsed = parse_text(text, "fio")
    what, ms = SHORT[name]
    flags = _rounded(parsed.flags)
    assert len(flags) == 1, parsed.flags
    assert f"fio timed {what} as {ms} ms, rounded up to whole ms" in flags[0]
    bound = "any amount" if ms == 1 else f"up to {100 / (ms - 1):.0f}% ({ms}/{ms - 1})"
    assert f"may be {bound} higher" in flags[0]
    assert "raise size, or run time_based with runtime=" in flags[0]
    # not refused: the figures are fio's, I/Os over the rounded-up runtime (text rounds IOPS to 3 digits)
    primary = "read_iops" if "read" in what else "write_iops"
    assert parsed.metric(primary).value == pytest.approx(_iops_over_runtime(text), rel=0.01)


@pytest.mark.parametrize("name", LONG)
def test_a_runtime_over_the_bound_is_not_flagged(name: str) -> None:
    parsed = parse_text((FOUND / name).read_text(), "fio")
    assert not _rounded(parsed.flags) and parsed.metric("write_iops").value > 0


@pytest.mark.parametrize("ms", range(0, 42))
def test_flagged_exactly_when_the_rounding_can_be_over_the_share(ms: int) -> None:
    """R ms printed: the true rate may be R / (R - 1) of the figure; flagged iff that is over 1 + ROUNDED_SHARE."""
    doc = json.loads((FOUND / "fio-3.33-null-64k-1ms.json").read_text())
    doc["jobs"][0]["read"]["runtime"] = ms
    text = (FOUND / "fio-3.33-null-64k-1ms-text.log").read_text().replace("/1msec)", f"/{ms}msec)")
    over = ms <= 1 or ms / (ms - 1) > 1 + ROUNDED_SHARE + 1e-12
    assert over == (ms <= ROUNDED_MAX_MS)
    for parsed in (parse_text(json.dumps(doc), "fio"), parse_text(text, "fio")):
        assert bool(_rounded(parsed.flags)) == over, (ms, parsed.flags)


def test_fio_2_text_runtime_is_read_too() -> None:
    text = (FOUND / "fio-2.2.10-randwrite-text.log").read_text()
    assert not _rounded(parse_text(text, "fio").flags)
    flags = _rounded(parse_text(text.replace("runt=134412msec", "runt=    12msec"), "fio").flags)
    assert len(flags) == 1 and "as 12 ms" in flags[0] and "up to 9% (12/11)" in flags[0], flags


def test_a_verify_pass_is_not_what_the_flag_names() -> None:
    """A write job's reads are its verify pass, left out (VERIFY): the flag names the write it keeps."""
    parsed = parse_run("fio", (FOUND / "fio-3.33-write-verify.json").read_text(), requested={"rw": "write"})
    flags = _rounded(parsed.flags)
    assert len(flags) == 1 and " write as 11 ms" in flags[0] and " read " not in flags[0], parsed.flags


def test_the_shortest_of_several_jobs_is_named_with_how_many() -> None:
    doc = json.loads((FOUND / "fio-3.33-null-64k-1ms.json").read_text())
    doc["jobs"] = [dict(doc["jobs"][0], jobname=f"j{ms}", read=dict(doc["jobs"][0]["read"], runtime=ms))
                   for ms in (30, 5, 3)]
    flags = _rounded(parse_text(json.dumps(doc), "fio").flags)
    assert len(flags) == 1 and "fio timed j3 read as 3 ms" in flags[0] and "2 job directions ran" in flags[0]


def test_the_flag_is_no_other_cell_flag_of_the_analyzer() -> None:
    """The analyzer takes a run flag starting with SHORT for its SHORT cell flag ("stopped before doing the
    requested work", celldata.py `starts_with(f, 'SHORT')`), which a fio run that did all its work is not; it is
    read as the analyzer's own ROUNDED_RUNTIME cell flag (tests/analysis/test_analysis_rounded_runtime.py)."""
    flag = _rounded(parse_text((FOUND / "fio-3.33-null-64k-1ms.json").read_text(), "fio").flags)[0]
    assert [name for name in ORDER if flag.startswith(name)] == ["ROUNDED_RUNTIME"]


def test_the_templates_old_argv_gave_a_rounded_runtime_and_its_argv_now_times_a_whole_runtime() -> None:
    """Real captures of the fio template (size 1M, the rest its defaults): without --time_based 256 reads ended the
    run in 5 ms (runtime=10 only a cap), flagged; with it the job is timed the whole runtime, over 1000 ms."""
    old = parse_text((FOUND / "fio-3.33-template-1m-5ms.json").read_text(), "fio")
    assert _rounded(old.flags) and old.metric("read_iops").value == pytest.approx(51200.0)
    text = (FOUND / "fio-3.33-template-1m-time-based.json").read_text()
    new = parse_text(text, "fio")
    assert json.loads(text)["jobs"][0]["read"]["runtime"] >= 1000 and not new.flags
    assert new.metric("read_iops").value == pytest.approx(76280.719281)


@pytest.mark.parametrize("rw", ["randread", "write", "randrw"])
def test_a_real_run_of_the_template_with_a_tiny_size_is_not_rounded(rw: str, tmp_path: Path) -> None:
    """The template's own argv on the real fio, with the smallest runtime and a size read or written in about a ms
    (buffered, so any file system serves): the old argv ended after one pass over 1M, flagged ROUNDED_RUNTIME;
    --time_based keeps every direction going the whole runtime (>= 1 s, fio's rounding then under 0.1%)."""
    params = {"rw": rw, "bs": "64K", "size": "1M", "iodepth": 1, "direct": False, "runtime": 1}
    argv = templates.get("fio").build_argv(params, workdir=str(tmp_path))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    parsed = parse_run("fio", proc.stdout, proc.stderr, proc.returncode, params)
    assert not _rounded(parsed.flags) and not parsed.flags, parsed.flags
    job = json.loads(proc.stdout)["jobs"][0]
    ran = [job[d]["runtime"] for d in ("read", "write") if job[d]["total_ios"]]
    assert ran and min(ran) >= 1000, ran
