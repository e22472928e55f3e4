"""fio runs a synchronous engine (psync, fio's default; sync, pvsync2, mmap...) one I/O at a time whatever its
iodepth: 3.33 says so before the report (`note: both iodepth >= 1 and synchronous I/O engine are selected, queue
depth will be capped at 1`), earlier versions say nothing. Such a run's figures are of queue depth 1 while its echoed
iodepth names another cell (podtax's fio runs libaio for any iodepth over 1): PARAM_MISMATCH, whatever the params.
Captures of fio 3.33 and one edited to 3.28 (tests/corpus-found/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CAPPED = "PARAM_MISMATCH: iodepth: fio ran iodepth={} with the synchronous engine {}, which keeps one I/O in flight"


@pytest.mark.parametrize(("name", "depth", "engine"), [
    ("fio-3.33-psync-iodepth16.json", 16, "psync"),
    ("fio-3.33-psync-iodepth16-text.log", 16, "psync"),
    ("fio-3.28-edited-from-3.33-psync-iodepth16.json", 16, "psync"),  # no note before 3.33: the engine tells
    ("fio-3.33-default-engine-iodepth8.json", 8, "psync (fio's default)"),
])
def test_a_synchronous_engine_at_a_depth_over_1_is_another_cell(name: str, depth: int, engine: str) -> None:
    text = (FOUND / name).read_text()
    for parsed in (parse_run("fio", text, "", 0, {"rw": "randread", "bs": "4k", "iodepth": depth}), parse_text(text)):
        assert parsed.echoed["iodepth"] == depth
        capped = [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: iodepth: ")]
        assert capped and capped[0].startswith(CAPPED.format(depth, engine)), parsed.flags
        assert "its figures are those of queue depth 1" in capped[0]


def test_libaio_at_depth_16_is_the_template_cell() -> None:
    text = (FOUND / "fio-3.33-libaio-iodepth16.json").read_text()
    parsed = parse_run("fio", text, "", 0, {"rw": "randread", "bs": "4k", "iodepth": 16, "direct": 0})
    assert parsed.flags == () and parsed.echoed["ioengine"] == "libaio"


@pytest.mark.parametrize(("name", "depth", "engine"), [
    ("fio-3.33-psync-iodepth16-and-4.json", "16,4", "psync"),  # two psync jobs: fio said its note twice
    ("fio-3.28-edited-from-3.33-psync-iodepth16-and-4.json", "16,4", "psync"),  # no note: every engine synchronous
    ("fio-3.33-psync-iodepth4-libaio-iodepth16.json", "4,16", "psync (jobs of psync,libaio)"),  # the note tells
    ("fio-3.28-edited-from-3.33-net-iodepth16.json", "16", "net"),  # engines/net.c: FIO_SYNCIO
    ("fio-3.33-net-iodepth16.json", "16", "net"),
])
def test_jobs_of_several_depths_and_the_net_engine(name: str, depth: str, engine: str) -> None:
    text = (FOUND / name).read_text()
    for parsed in (parse_run("fio", text, "", 0, None), parse_text(text)):
        assert str(parsed.echoed["iodepth"]) == depth
        capped = [f for f in parsed.flags if f.startswith(CAPPED.format(depth, engine))]
        assert capped and "its figures are those of queue depth 1" in capped[0], parsed.flags


def test_psync_at_depth_1_beside_libaio_at_16_is_not_capped() -> None:
    """Jobs joined `psync,libaio` and `1,16`: no note, and libaio keeps its 16 in flight: no flag."""
    text = (FOUND / "fio-3.33-psync-iodepth1-libaio-iodepth16.json").read_text()
    for parsed in (parse_run("fio", text, "", 0, None), parse_text(text)):
        assert parsed.echoed["iodepth"] == "1,16"
        assert not [f for f in parsed.flags if "synchronous engine" in f], parsed.flags
