"""fio 2.17-2.19 and 3.0-3.25 printed some IOPS figures of 10,000 and more up to 9% off (num2str, fixed in fio 2.20
and in fio 3.26, c736b361): fio 3.25 prints 19961 as `19.0k`, fio 2.17 prints 19803 as `19.9k` (r10's review,
num2str.c of those tags compiled). Debian 11 ships fio 3.25, Ubuntu 20.04 3.16, RHEL 8 3.19. The figure is still
1000 x the `issued` count over the runtime in ms, so it is read from them when the version's num2str prints that
quotient as the figure; a figure fio would not print for them is kept as printed and said in TEXT_OUTPUT."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text
from podtax.parsers.fio_iops import old_num2str

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
# an edit of a real fio 3.33 capture (rate_iops=19980: `IOPS=20.0k` for 19981 I/Os in 1001 ms, 19961.04 in its
# JSON) printed as fio 3.25's num2str prints it: `fio-3.25`, `IOPS=19.0k` (README of tests/corpus-found)
EDITED = "fio-3.25-edited-from-3.33-rate-20k-text.log"


@pytest.mark.parametrize(("kind", "count", "printed"), [
    ("3.0", 19961, 19000), ("3.0", 99960, 99000), ("3.0", 10996, 10000), ("3.0", 109960, 110000),
    ("3.0", 17969, 17000), ("2.17", 19042, 19500), ("2.17", 19960, 19100), ("2.17", 10005, 10500),
    ("2.17", 19803, 19900), ("2.17", 10009, 10900), ("2.17", 190420, 190000), ("3.0", 9999, 9999)])
def test_old_num2str_prints_as_fio_did(kind: str, count: int, printed: float) -> None:
    """Figures of num2str.c from fio-2.17 and fio-3.25 compiled (r10; 59667 numbers agree in fx10's check)."""
    assert old_num2str(count, kind) == printed


@pytest.mark.parametrize(("name", "key", "count", "ms"), [
    (EDITED, "read_iops", 19981, 1001),  # `IOPS=19.0k`
    ("fio-3.8-verify-text.log", "write_iops", 128000, 7123),  # real fio 3.8: `write: IOPS=17.0k` for 17969.96
    ("fio-2.17-kb-base-1000-rate-text.log", "read_iops", 19942, 1007),  # real fio 2.17: `IOPS=19.9k` for 19803.38
])
def test_a_figure_an_old_fio_printed_off_is_read_from_its_count(name: str, key: str, count: int, ms: int) -> None:
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), "fio")
    assert parsed.values()[key] == pytest.approx(count * 1000 / ms, rel=1e-12)
    assert "not what fio prints" not in parsed.flags[0]


@pytest.mark.parametrize(("version", "printed"), [("fio-3.33", "19.0k"), ("fio-3.25", "19.5k")])
def test_a_figure_fio_would_not_print_for_its_count_is_kept_and_said(version: str, printed: str) -> None:
    """fio 3.33 prints 19961 as `20.0k`, fio 3.25 as `19.0k`: another figure (a hand-edited or spliced log) is kept."""
    text = (FOUND / EDITED).read_text(encoding="utf-8").replace("fio-3.25", version)
    parsed = parse_text(text.replace("IOPS=19.0k", f"IOPS={printed}"), "fio")
    assert parsed.values()["read_iops"] == float(printed[:-1]) * 1000
    assert parsed.flags[0].endswith("an IOPS figure is not what fio prints for its `issued` I/Os over its runtime (a "
                                    f"hand-edited or spliced log?), kept as printed: q read printed "
                                    f"{float(printed[:-1]) * 1000:g}, its issued I/Os over its runtime 19961"), \
        parsed.flags[0]


def test_the_refusal_names_the_job_whose_figure_needs_the_count() -> None:
    """Both `issued` lines lost: the job of 7505 IOPS (first) can be read as printed, the one of `IOPS=4` cannot."""
    lines = (FOUND / "fio-3.33-two-jobs-one-rate-limited-json-normal.log").read_text(encoding="utf-8").splitlines(
        keepends=True)
    start = lines.index("{\n")
    text = "".join(line for line in lines[:start] + lines[lines.index("}\n", start) + 1:]
                   if not line.lstrip().startswith("issued rwts:"))
    with pytest.raises(ParseFailure, match=r"^truncated: fio job slow's report has its `IO depths` line"):
        parse_text(text, "fio")
