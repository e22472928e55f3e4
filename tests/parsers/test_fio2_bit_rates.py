"""fio 2.1 to 2.16 print rates in bits with unit_base=1 (`bw=639393Kbit/s`, `aggrb=...Kbit/s`): num2str multiplies the
bytes by 8 and appends `bit`, its `K` 1024 (or 1000 with kb_base=1000, the same words). podtax refused such a line as a
form it does not read. Real captures of fio 2.16 built from its tag (tests/corpus-found, README with the commands);
fio 2.17's `IOPS=, BW=` line, which prints SI units apart (`81.2MB/s (77.4MiB/s)`, `617Mibit/s`), was read already and
is kept as a regression."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text
from podtax.parsers.fio_groups import kib
from podtax.parsers.fio_kb_base import group_rate

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = {  # capture: (read_iops: issued x 1000 / runt, which gives the printed figure; read_bw in KiB/s: the
    # printed figure in bytes over 1024)
    "fio-2.16-unit-base-1-text.log": (186662e3 / 1005, 5804.2 * 1024**2 / 8 / 1024),  # bw=5804.2Mbit/s
    "fio-2.16-unit-base-1-rate-text.log": (20001e3 / 1001, 639393 * 1024 / 8 / 1024),  # bw=639393Kbit/s
    "fio-2.16-unit-base-1-kb-base-1000-text.log": (137214e3 / 1005, 4473.9e6 / 8 / 1024),  # 4473.9Mbit/s, M: 10^6
    "fio-2.16-unit-base-1-kb-base-1000-rate-text.log": (20001e3 / 1001, 654738e3 / 8 / 1024),  # 654738Kbit/s, K: 1000
    # fio 2.17's num2str printed 19803 as `IOPS=19.9k` and 19745 as `19.8k` (fio_iops.old_num2str)
    # and its `BW=` from the issued I/Os x 4096 B (fio_iops.exact_bw): `81.2MB/s` for 81114629 B/s
    "fio-2.17-kb-base-1000-rate-text.log": (19942e3 / 1007, 19942 * 4096e3 / 1007 / 1024),  # 81.2MB/s
    "fio-2.17-unit-base-1-rate-text.log": (19844e3 / 1005, 19844 * 4096e3 / 1005 / 1024),  # BW=617Mibit/s
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fio_2_rate_in_bits_is_read_in_its_base(name: str) -> None:
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), "fio")
    values = parsed.values()
    iops, rate = CASES[name]
    assert values["read_iops"] == pytest.approx(iops, rel=1e-12) and values["read_bw"] == pytest.approx(rate, rel=1e-9)
    assert values["read_bw"] == pytest.approx(iops * 4, rel=0.01)  # 4 KiB reads: IOPS x 4 KiB/s
    assert [f for f in parsed.flags if not f.startswith("TEXT_OUTPUT")] == []  # the group's `aggrb` agrees


def test_a_fio_2_unit_in_bits_is_an_eighth_of_the_bytes() -> None:
    assert kib("8", "Kbit") == 1.0 and kib("8", "KB") == 8.0 and kib("8192", "bit") == 1.0
    assert kib("8", "Mbit") == 1024.0
    assert group_rate(1024.0, "Kbit", decimal=True) == 1000.0  # kb_base=1000: K is 1000 bits
    assert group_rate(1024.0, "Kbit", decimal=False) == 1024.0
