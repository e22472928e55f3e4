"""fio 2 (up to 2.16) prints `KB/s` and `Kbit/s` alike for kb_base=1024 and 1000; podtax tells them apart by IOPS x
block size (fio_kb_base), which cannot decide under MIN_IOPS (500). Review r3's captures of fio 2.16 (the build of
tests/corpus-found/README.md, commands there): with unit_base=1, kb_base=1000 and 73 IOPS, `io=606208B,
bw=2415.2Kbit/s, runt=2008msec` was read in powers of 1024, 2.4% high, with no flag. Now a plain-bytes `io=` over
its `runt=` decides the base (606208 B / 2.008 s = 301,896 B/s = 2415.2 Kbit/s with K = 1000 bits); where nothing
decides and a rate has a prefix (`io=41943KB, bw=20480KB/s, iops=19`), TEXT_OUTPUT says the rates may be up to
2.4% (K) or 4.9% (M) high."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
UNDECIDED = "this log tells neither"
CASES = {  # capture: (read_bw in KiB/s as fio meant it, whether the base is left undecided)
    "fio-2.16-unit-base-1-kb-base-1000-low-iops-text.log": (606208 / 2.008 / 1024, False),  # K = 1000 bits
    "fio-2.16-unit-base-1-low-iops-text.log": (2407.6 * 1024 / 8 / 1024, False),  # kb_base=1024, io=618496B
    "fio-2.16-kb-base-1000-bs-1m-low-iops-text.log": (20480.0, True),  # really 20,000 KiB/s (JSON): 2.4% high
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fio_2_rate_of_few_iops_is_read_in_its_base_or_flagged(name: str) -> None:
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), "fio")
    rate, undecided = CASES[name]
    assert parsed.values()["read_bw"] == pytest.approx(rate, rel=1e-4)
    text_flag = next(f for f in parsed.flags if f.startswith("TEXT_OUTPUT: "))
    assert (UNDECIDED in text_flag) == undecided
    if undecided:
        assert "up to 2.4% high (`K`), 4.9% (`M`)" in text_flag
