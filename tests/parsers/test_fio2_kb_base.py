"""fio 2 before 2.16 printed `KB/s` and `MB/s` for rates in powers of 1024 (the default) and in powers of 1000
(`kb_base=1000`) alike; podtax read both as KiB, so a kb_base=1000 text was 2.4% (KB) or 4.9% (MB) high. Real
captures of fio 2.2.10 (tests/corpus-found, README with the commands): the rate is now checked against IOPS x bs
(the header's block size, always in powers of 1024) and read in powers of 1000 when that is what it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import parse_text
from podtax.parsers.fio_kb_base import read_decimal_rates

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = {  # capture: (read_iops, read_bw in KiB/s: the printed figure in bytes over 1024)
    "fio-2.2.10-kb-base-1000-text.log": (369278, 1512.6e6 / 1024),  # bw=1512.6MB/s
    "fio-2.2.10-kb-base-1000-rate-text.log": (19981, 81842e3 / 1024),  # bw=81842KB/s
    "fio-2.2.10-kb-base-1024-text.log": (222858, 891436),  # bw=891436KB/s, KB = 1024 bytes
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fio_2_rate_is_read_in_the_base_it_was_printed_in(name: str) -> None:
    values = parse_text((FOUND / name).read_text(), "fio").values()
    iops, kib = CASES[name]
    assert values["read_iops"] == iops and values["read_bw"] == pytest.approx(kib, rel=1e-9)
    assert values["read_bw"] == pytest.approx(iops * 4, rel=0.001)  # 4 KiB reads: IOPS x 4 KiB/s


def test_the_json_of_fio_2_is_kib_whatever_kb_base() -> None:
    text = (FOUND / "fio-2.2.10-kb-base-1000.json").read_text()
    read = json.loads(text)["jobs"][0]["read"]
    assert parse_text(text, "fio").values()["read_bw"] == read["bw"] == pytest.approx(read["iops"] * 4, rel=1e-6)


def test_a_rate_is_left_as_printed_when_the_run_cannot_tell() -> None:
    """Too few IOPS to tell 2.4% from fio's truncation, a range of block sizes, or a rate near neither."""
    head = "kb: (g=0): rw=randread, bs=4K-4K/4K-4K/4K-4K, ioengine=psync, iodepth=1\n"
    cases = [(head, 400.0, 1638.4), (head.replace("4K-4K/", "4K-64K/", 1), 20000.0, 81920.0),
             (head, 20000.0, 80000.0 * 1.012)]
    for text, iops, kib in cases:
        jobs = [("kb", "0", {"read_iops": iops, "read_bw": kib})]
        read_decimal_rates(text, jobs, {(1, "read"): 1})
        assert jobs[0][2]["read_bw"] == kib, (text, iops)
