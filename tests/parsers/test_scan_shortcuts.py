"""The parsers' shortcuts past whole-log regex scans and repeated substring searches give the same
answer as the plain search they replace (issue 15): base.at_line_starts is `pattern.finditer(text)` (fio's
job counts; with a limit, detect's hdparm device line), a detect.py signature group is looked for only when
the part all its words share is there, a word only when its guard character is (base.guard), and a stress-ng
log in the common form is read in one regex pass."""

from __future__ import annotations

import random
import re

import pytest
from podtax.parsers import detect, fio_text, iperf3, stressng, stressng_forms, stressng_state, sysbench_runs
from podtax.parsers.base import ParseFailure, at_line_starts, guard, holds_any

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


def _guarded_words() -> list[tuple[str, str]]:
    groups = [value for name, value in vars(detect).items() if name.endswith("_ANY")]
    groups += [value for name, value in vars(sysbench_runs).items() if name.endswith("_MARKS")]
    return [*((g, w) for w, g in detect._GUARD.items()), *(pair for group in groups for pair in group)]


def test_a_word_is_looked_for_only_past_a_guard_it_holds() -> None:
    """detect and sysbench_runs rule a word out when its guard (base.guard) is not in the log: the guard must
    be one of the word's characters, and `holds_any` must be `any(word in text)` (every capture, and the words
    themselves with one character changed)."""
    pairs = _guarded_words()
    assert len(pairs) > 50
    assert [(g, w) for g, w in pairs if len(g) != 1 or g not in w or g != guard(w)] == []
    words = [w for _, w in pairs]
    texts = _texts() + words + [w[:i] + "\x00" + w[i + 1:] for w in words for i in range(len(w))]
    for g, w in pairs:
        assert [t for t in texts if holds_any(t, ((g, w),)) != (w in t)] == []


_PREFIXES = ("stress-ng: info:  [12] ", "stress-ng: metrc: [7] ", "stress-ng: info:  [1]  ")
_BODIES = ("cpu 3000 1.69 1.69 0.00 1770.62 1770.72", "cpu   3000   1.69 1.69 0.00 1770.62 1770.72 99.80 6512",
           "cpu 3000 1.69 1.69 0.00 1770.62 1770.72 99.80", "cpu 3000 1.69 1.69 0.00 1770.62",
           "vm 0 1.00 0.00 0.00 0.00 0.00",
           "cpu 3000 1.69 1.69 0.00 1770.62 1770.72 99.80 6512 5", "cpu 3000 1.6 1.69 0.00 1770.62 1770.72",
           "qsort 107.4 comparisons per sec", "qsort 1 nan", "cpu 9.88 nanoseconds per call", "cpu nan x",
           "cpu inf x y z a b c", "foo bar", "foo 1", "foo", "(secs) (secs)", "stressor bogo ops real time usr time",
           "stressor  bogo ops x CPU used per RSS Max", "miscellaneous metrics:", "miscellaneous metrics: ",
           "dispatching hogs: 2 cpu, 1 vm", "dispatching hogs:", "dispatchinghogs", "successful run completed in 2s",
           "unsuccessful run completed in 2s", "failed: 0", "failed: 1: cpu (1)", "failed: 2 x", "skipped: 3",
           "passed: 2: cpu (2)", "passed: x", "metrics untrustworthy: 1", "metrics untrustworthy: a",
           "setting to a 10 second run per stressor",
           "defaulting to a 86400 second (1 day, 0.00 secs) run per stressor",
           "stress-ng 0.19.02 gabc", "for a 2.00s run time:", "e5 1 2 3", "x e5", "x Infinity 1 2 3 4 5 6",
           "x -1 2.00 2.00 2.00 2.00 2.00", "a\tb", "a b\t", "cpu 1 2.00 2.00 2.00 2.00 2.00 ", "vm 9 x", "x \u0663 y",
           "stressorx 1 2.00 2.00 2.00 2.00 2.00", "cpu 3000 1.69 1.69 0.00 1770.62 1770.72 5",
           "qsort 107.4 comparisons per sec ", "qsort 107.4 comparisons per sec\t")


def _line_by_line(text: str) -> stressng_state.Scan:
    s, state = stressng_state.Scan(), 0
    *lines, last = text.split("\n")
    for raw in lines:
        state = stressng._line(s, raw, state)
    stressng._last(s, last, state)
    return s


def _slots(s: stressng_state.Scan) -> dict[str, object]:
    return {name: getattr(s, name) for name in stressng_state.Scan.__slots__}


def _mixes(rng: random.Random, count: int) -> list[str]:
    """`count` logs of lines in and near the common form (a start line, then 1 to 13 lines of _BODIES)."""
    pieces = [p + b for p in _PREFIXES for b in _BODIES] + ["", " ", "stress-ng: warn:  [1] x"]
    return [_PREFIXES[0] + "setting to a 2 second run per stressor\n"
            + "\n".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14))) + rng.choice(["\n", "", "\n\n"])
            for _ in range(count)]


def _left_to_line(text: str) -> int:
    """How many lines of `text` (all but its last) stressng_forms.plain_lines leaves to stressng._line."""
    left = []

    def line(s: stressng_state.Scan, raw: str, state: int) -> int:
        left.append(raw)
        return stressng._line(s, raw, state)

    stressng_forms.plain_lines(stressng_state.Scan(), text, text.rfind("\n"), stressng_state.HANDLERS, line)
    return len(left)


def test_the_common_form_pass_is_the_line_loop() -> None:
    """stressng._scan reads the lines of a short log that are in the common form in one regex pass
    (stressng_forms.plain_lines) and the others with _line: the same scan as _line over each line, on every
    stress-ng capture and 5,000 mixes of lines in and near that form (over 500 of them read by the pass
    alone, and over 500 partly)."""
    logs = [read_text(p) for folder in (CORPUS, CORPUS.parent / "corpus-found") for p in sorted(folder.rglob("*"))
            if p.is_file() and "stress" in p.name + p.parent.name]
    texts = [t for t in logs + _mixes(random.Random(15), 5000) if len(t) < 8192]
    left = [_left_to_line(t) for t in texts if t.startswith(stressng._PID_PREFIXES)]
    assert sum(n == 0 for n in left) > 500
    assert sum(n > 0 for n in left) > 500
    assert [t for t in texts if _slots(stressng._scan(t)) != _slots(_line_by_line(t))] == []


_CHATTER = "stress-ng: info:  [5] stream: memory rate: 1.00 MB/s read"


def test_the_long_log_reader_is_the_line_loop() -> None:
    """stressng._scan reads a log of 2 KiB or more passing over chatter (_NEXT) and reading table rows and misc
    metrics in C (_ROW, _MISC): the same scan as _line over each line, on 5,000 mixes with 40 or 160 lines of
    chatter put in. _ROW read `cpu 3000 1.69 1.69 0.00 1770.62 1770.72 5` as a row using 5 % CPU, which _line
    refuses as cut, and _MISC kept a misc description's trailing blanks, which _line strips."""
    rng = random.Random(16)
    texts = []
    for mix in _mixes(rng, 5000):
        lines = mix.split("\n")
        at = rng.randrange(1, len(lines) + 1)
        texts.append("\n".join(lines[:at] + [_CHATTER] * rng.choice((40, 160)) + lines[at:]))
    assert min(len(t) for t in texts) >= 2048
    assert [t for t in texts if _slots(stressng._scan(t)) != _slots(_line_by_line(t))] == []


def test_a_row_cut_in_its_seventh_figure_is_refused_in_a_long_log_too() -> None:
    """A --metrics row cut after the first digit of its CPU use (`... 1770.72 9`, then a newline) is refused
    whatever the log's length (a long log, read by _NEXT/_ROW, read it as a CPU use of 9 %). Since 7023926 a log
    under 8 KiB that starts in the common form is read by the one-pass reader, so the long one is past 8 KiB."""
    log = ("stress-ng: info:  [7] dispatching hogs: 1 cpu\n"
           "stress-ng: info:  [7] stressor bogo ops real time usr time sys time bogo ops/s bogo ops/s CPU used per "
           "RSS Max\n"
           "stress-ng: info:  [7] cpu 3000 1.69 1.69 0.00 1770.62 1770.72 9\n"
           "stress-ng: info:  [7] successful run completed in 1.70s\n")
    middle, long = (log.replace("\n", "\n" + (_CHATTER + "\n") * n, 1) for n in (40, 160))
    assert len(log) < 2048 <= len(middle) < 8192 <= len(long)
    for text in (log, middle, long):
        with pytest.raises(ParseFailure, match=r"cpu row's `9` lacks the 2 decimals"):
            stressng.parse(text)
