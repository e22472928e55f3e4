"""fio's text prints a rate under 1000 IOPS cut to a whole number (`iops = 1000 * total_io_u / runt` in integers):
a job of few IOPS read far low from text. Real captures of this machine (tests/corpus-found/README.md, commands there),
each one run's stdout with `--output-format=json,normal`: two jobs side by side, one held to `rate_iops=5`, printed
`read: IOPS=4` for 10 I/Os in 2001 ms (its JSON 4.997501: 20% low; the run's sum likewise), and one job at
`--rate_iops=7`, `IOPS=6` for 14 I/Os in 2001 ms (JSON 6.996502: 14% low). Now such a figure is the job's `issued`
total x 1000 over its runtime, as fio's JSON computes it, when the printed number is that quotient cut; the text
part gives the JSON part's IOPS. Likewise from 10,000 on, printed to 3 significant digits (`IOPS=27.6k` for 27642.36,
0.15%; up to 0.5%, and up to 9% in fio 2.17-2.19 and 3.0-3.25: test_fio_text_old_num2str.py): read exactly too when
the figure is that quotient as fio prints it (r5's review)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CAPTURES = ("fio-3.33-two-jobs-one-rate-limited-json-normal.log", "fio-3.33-rate-iops-7-json-normal.log",
            "fio-3.33-unified-rate-iops-3-json-normal.log",  # `mixed: IOPS=6` for 13 I/Os in 2001 ms (6.496752)
            "fio-3.33-two-jobs-27k-iops-json-normal.log")  # `IOPS=27.6k` for 27670 I/Os in 1001 ms (27642.36)


def _parts(name: str) -> tuple[str, str]:
    """The run's JSON report and its normal text (the lines before and after the JSON object)."""
    lines = (FOUND / name).read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines.index("{\n")
    end = lines.index("}\n", start)
    return "".join(lines[start:end + 1]), "".join(lines[:start] + lines[end + 1:])


@pytest.mark.parametrize("name", CAPTURES)
def test_the_text_gives_the_iops_of_the_json_of_the_same_run(name: str) -> None:
    report, text = _parts(name)
    want = {k: v for k, v in parse_text(report, "fio").values().items() if k.endswith("_iops")}
    got = {k: v for k, v in parse_text(text, "fio").values().items() if k.endswith("_iops")}
    assert got.keys() == want.keys()
    for key, value in want.items():  # printed cut to a whole number or to 3-4 digits: read exactly now
        assert got[key] == pytest.approx(value, rel=1e-6), (key, got[key], value)


def test_the_rate_limited_job_and_the_sum() -> None:
    _report, text = _parts(CAPTURES[0])
    values = parse_text(text, "fio").values()
    assert values["slow_read_iops"] == pytest.approx(10 * 1000 / 2001)
    assert values["read_iops"] == pytest.approx(values["fast_read_iops"] + 10 * 1000 / 2001)
    assert values["fast_read_iops"] == pytest.approx(15019 * 1000 / 2001)  # printed `IOPS=7505`


def test_a_figure_that_is_not_the_issued_quotient_is_kept_as_printed() -> None:
    """An `issued` total that does not give the printed figure (another count) changes nothing."""
    _report, text = _parts(CAPTURES[1])
    assert parse_text(text.replace("total=14,0,0,0", "total=30,0,0,0"), "fio").values()["read_iops"] == 6


def test_an_excerpt_without_its_issued_line_says_its_whole_figure_may_be_low() -> None:
    _report, text = _parts(CAPTURES[1])
    cut = text[:text.index("  IO depths    :")]
    parsed = parse_text(cut, "fio")
    assert parsed.values()["read_iops"] == 6
    flag = next(f for f in parsed.flags if f.startswith("TEXT_OUTPUT: "))
    assert flag.endswith("no `issued` line to tell it exactly (an excerpt): up to 1 IOPS low: slow read 6"), flag


def _without_issued(text: str, job: int) -> str:
    """The text with the `issued` line of its job-th report (from 0) lost."""
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.lstrip().startswith("issued rwts:")][job]
    return "".join(lines[:at] + lines[at + 1:])


def test_a_report_without_its_issued_line_after_io_depths_is_refused_where_a_figure_needs_it() -> None:
    """fio prints `issued` after `IO depths` in every job report: without it a whole figure under 1000 (`IOPS=4`,
    cut from 4.9975) cannot be told, so the log is refused as cut there."""
    _report, text = _parts(CAPTURES[0])
    with pytest.raises(ParseFailure, match=r"fio job slow's report has its `IO depths` line but not the `issued` .*"
                                           r"\(slow read 4: up to 1 IOPS low\)"):
        parse_text(_without_issued(text, 1), "fio")


@pytest.mark.parametrize(("name", "job", "printed"), [(CAPTURES[0], 0, {"fast_read_iops": 7505}),
                                                      (CAPTURES[3], 0, {"j_0_read_iops": 27600}),
                                                      (CAPTURES[3], 1, {"j_1_read_iops": 27600})])
def test_a_report_without_its_issued_line_of_figures_of_1000_and_more_reads_them_as_printed(
        name: str, job: int, printed: dict[str, float]) -> None:
    """A figure of 1000 and more is printed whole or to 3 significant digits: without its `issued` line it is read as
    printed, as before the line was read (r5's review: such a log was refused)."""
    _report, text = _parts(name)
    parsed = parse_text(_without_issued(text, job), "fio")
    values = parsed.values()
    assert {key: values[key] for key in printed} == printed
    assert parsed.flags[0] == ("TEXT_OUTPUT: parsed fio's rounded text output; use --output-format=json for exact "
                               "figures")
