"""fio 2.17-2.19 and 3.0-3.25 print the text's `BW=` figures with the same old num2str as their IOPS (fio_iops.
old_num2str; fixed in fio 2.20 and 3.26): fio 3.25 prints 21978000 B/s (20.96 MiB/s) as `20.0MiB/s` and 81760415 B/s
as `77.0MiB/s`, fio 2.17 prints 81114629 B/s as `81.2MB/s` (r10's review; num2str.c of those tags compiled). fio's
figure is 1000 x the bytes over the runtime in ms, so where the run has one fixed block size per direction it is
read as the `issued` I/Os x that size over the runtime when the version's num2str prints that rate as the figure;
a figure fio would not print for them is kept as printed and said in TEXT_OUTPUT; other versions are left as printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text
from podtax.parsers.fio_iops import old_num2str

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
# EDITED from a real fio 3.33 capture (README of tests/corpus-found): 19981 I/Os of 4096 B in 1001 ms, 81760415 B/s,
# printed as fio 3.25 prints it: `BW=77.0MiB/s` (fio 3.33: `78.0MiB/s`)
EDITED = "fio-3.25-edited-from-3.33-rate-20k-text.log"
MIB = 1024 * 1024


@pytest.mark.parametrize(("kind", "rate", "printed"), [
    ("3.0", 21978000, 20.0 * MIB), ("3.0", 81760415, 77.0 * MIB), ("2.17", 21978000, 20.1 * MIB),
    ("2.17", 81760415, 77.1 * MIB), ("3.0", 1048064, 1024 * 1024), ("3.0", 10239999, 10000 * 1024),
    ("3.0", 9999, 9999)])
def test_old_num2str_prints_rates_in_powers_of_1024_as_fio_did(kind: str, rate: int, printed: float) -> None:
    """Figures of num2str(rate, 4, 1, 1, N2S_BYTEPERSEC) of fio-3.25 and fio-2.17 compiled (40,000 rates of 1000 to
    10^11 B/s agree for each)."""
    assert old_num2str(rate, kind, 1024) == pytest.approx(printed, rel=1e-12)


@pytest.mark.parametrize(("name", "count", "ms"), [
    (EDITED, 19981, 1001),  # `BW=77.0MiB/s` for 77.97 MiB/s (-1.2%)
    ("fio-2.17-kb-base-1000-rate-text.log", 19942, 1007),  # real fio 2.17: `BW=81.2MB/s` for 81.11 MB/s
    ("fio-2.17-unit-base-1-rate-text.log", 19844, 1005),  # real fio 2.17: `BW=617Mibit/s`
])
def test_a_rate_an_old_fio_printed_off_is_read_from_its_count(name: str, count: int, ms: int) -> None:
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), "fio")
    assert parsed.values()["read_bw"] == pytest.approx(count * 4096 * 1000 / ms / 1024, rel=1e-12)
    assert "is not what" not in parsed.flags[0], parsed.flags[0]


def test_a_rate_fio_would_not_print_for_its_count_is_kept_and_said() -> None:
    text = (FOUND / EDITED).read_text(encoding="utf-8").replace("BW=77.0MiB/s", "BW=79.0MiB/s")
    parsed = parse_text(text, "fio")
    assert parsed.values()["read_bw"] == 79 * 1024
    assert parsed.flags[0].endswith("a `BW=` figure is not what this fio prints for its `issued` I/Os x its block "
                                    "size over its runtime (short I/Os, or a hand-edited log?), kept as printed: q "
                                    "read printed 80896 KiB/s, its issued I/Os x 4096 B over its runtime 79844.2"), \
        parsed.flags[0]


@pytest.mark.parametrize(("old", "new"), [
    ("(R) 4096B-4096B", "(R) 4096B-8192B"),  # bsrange: the bytes are not the count x one size
    ("fio-3.25", "fio-3.26"),  # fio 3.26 and later print it right (rounded): kept as printed
])
def test_a_rate_is_kept_as_printed_without_one_size_or_in_a_fixed_version(old: str, new: str) -> None:
    text = (FOUND / EDITED).read_text(encoding="utf-8").replace(old, new)
    parsed = parse_text(text, "fio")
    assert parsed.values()["read_bw"] == 77 * 1024
    assert "is not what" not in parsed.flags[0] or "BW=" not in parsed.flags[0]
