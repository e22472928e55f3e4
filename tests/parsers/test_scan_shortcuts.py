"""The parsers' shortcuts past whole-log regex scans and repeated substring searches give the same
answer as the plain search they replace (issue 15): base.at_line_starts is `pattern.finditer(text)` (fio's
job counts; with a limit, detect's hdparm device line), and a detect.py signature group is looked for only when
the part all its words share is there."""

from __future__ import annotations

import random
import re

import pytest
from podtax.parsers import detect, fio_text, iperf3
from podtax.parsers.base import at_line_starts

from tests.parsers.corpus_index import CORPUS, read_text

_LINES = [(fio_text._STARTING, "Starting "), (fio_text._JOBS, ": (groupid=")]
_PIECES = ("Starting ", "Starting 4 processes", "Starting 12 threads\n", "a: (groupid=0, jobs=3)",
           ":x: (groupid=1, jobs=2): err", "  j: (groupid=3, jobs=1)", "\n", " ", "\t", "x", ":", "\r", "\x0b",
           "/dev/sda:", " /dev/sdb: Permission denied", "/dev/", "\n/dev/sdc:\n")


def _texts() -> list[str]:
    logs = [read_text(p) for folder in (CORPUS, CORPUS.parent / "corpus-found") for p in sorted(folder.rglob("*"))
            if p.is_file()]
    rng = random.Random(15)
    return logs + ["".join(rng.choice(_PIECES) for _ in range(rng.randrange(12))) for _ in range(3000)]


def _groups(pattern: re.Pattern[str], text: str, word: str) -> list[str]:
    return [m.group(1) for m in at_line_starts(pattern, text, word)]


@pytest.mark.parametrize(("pattern", "word"), _LINES, ids=["starting", "jobs"])
def test_at_line_starts_is_findall(pattern: re.Pattern[str], word: str) -> None:
    texts = _texts()
    assert sum(bool(_groups(pattern, t, word)) for t in texts) > 100  # real matches are compared
    assert [t for t in texts if _groups(pattern, t, word) != pattern.findall(t)] == []


def test_the_device_line_is_the_plain_search() -> None:
    """detect's hdparm device line: at_line_starts with a limit of 16 lines, then the plain search."""
    texts = _texts() + ["\n".join(["/dev/x: y"] * 20 + ["/dev/sdz:"]), "/dev/a b\n" * 17 + " /dev/sdq:  \n"]
    found = [detect._device_line(t) for t in texts]
    assert sum(found) > 10 and found[-2] and found[-1]
    assert [t for t, f in zip(texts, found, strict=True) if f != bool(detect._HDPARM_DEVICE.search(t))] == []


@pytest.mark.parametrize(("group", "shared"), [(detect._FIO_NAMED, "fio"), (detect._IPERF3_NAMED, "iperf"),
                                               (detect._IPERF3_EVENTS, '{"event":"')], ids=["fio", "iperf", "event"])
def test_a_signature_group_shares_its_part(group: tuple[str, ...], shared: str) -> None:
    """A word without the shared part would never be looked for: its tool would go unrecognized."""
    assert [word for word in group if shared not in word] == []


@pytest.mark.parametrize("word", [*detect._FIO_NAMED, *detect._FIO_WORDS, *detect._IPERF3_NAMED,
                                  *detect._IPERF3_EVENTS, *iperf3.TEXT_MARKS])
def test_each_signature_alone_is_recognized(word: str) -> None:
    tool = "iperf3" if word in (*detect._IPERF3_NAMED, *detect._IPERF3_EVENTS, *iperf3.TEXT_MARKS) else "fio"
    assert tool in detect.tools_in(f"some output\n{word} 1\n")
