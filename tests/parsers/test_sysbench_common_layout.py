"""A sysbench run in the layout sysbench 1.0 prints for cpu and memory is read in one regex match
(sysbench_runs._fill_common, issue 15): the same Section as the line loop (_fill_lines) on every sysbench
capture's runs and on thousands of damaged and edited copies of them (the match is taken for hundreds)."""

from __future__ import annotations

import random

from podtax.parsers import _clean, sysbench_runs

from tests.parsers import damage
from tests.parsers.corpus_index import CORPUS, read_text

# lines spliced into a run: each is one the layout does not allow, or allows only in some places
_EDITS = ("", " ", "WARNING: x", "WARNING:  y  ", "FATAL: z", "CPU BENCHMARKS", "----", "sysbench 1.0.20",
          "sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta3)", "Threads started!", "    min:  1.00",
          "    99th percentile:  2.00", "Latency (ms):", "Threads fairness:", "    events per second: 3.00",
          "Invalid value for the 'x' option", "total time: 1.0s", "1.00 MiB transferred (2.00 MiB/sec)", "\t",
          "Target transaction rate: 10/sec", "    total number of events:  7", "x: y", "abc")


def _runs() -> list[str]:
    logs = [_clean(read_text(p)) for folder in (CORPUS, CORPUS.parent / "corpus-found")
            for p in sorted(folder.rglob("*")) if p.is_file()]
    return [run for log in logs if "sysbench 1." in log for run, _ in sysbench_runs.split_runs(log)]


def _variants(run: str, rng: random.Random) -> list[str]:
    lines = run.split("\n")
    out = [run, run.rstrip("\n"), run + "\n", run.replace("  ", " "), run.replace(":", ": ", 3),
           run.replace(":  ", ":\t ", 2), run.replace("  ", "\u00a0 ", 1), run.replace("\n    ", "\n\t", 1)]
    out += [text for _, text in damage.line_edits(run, 12, rng)]
    out += [text for _, text in damage.truncations(run, rng, 4)][-8:]
    for _ in range(40):
        at = rng.randrange(len(lines) + 1)
        edit = rng.choice(_EDITS)
        out.append("\n".join(lines[:at] + [edit] + lines[at:]))  # inserted
        out.append("\n".join(lines[:at] + [edit] + lines[at + 1:]))  # in place of a line
        out.append("\n".join(lines[:at] + [lines[at - 1] + edit if at else edit] + lines[at + 1:]))  # appended
    return out


def _slots(section: sysbench_runs.Section) -> dict[str, object]:
    return {name: getattr(section, name) for name in sysbench_runs.Section.__slots__}


def test_the_common_layout_match_is_the_line_loop() -> None:
    rng = random.Random(15)
    texts = [text for run in _runs() for text in _variants(run, rng)]
    taken = [text for text in texts if sysbench_runs._fill_common(text, None) is not None]
    assert len(texts) > 3000 and len(taken) > 300
    assert [text for text in texts if _slots(sysbench_runs._fill(text)) != _slots(sysbench_runs._fill_lines(text))] \
        == []
    # the fields' order too (a later key of the same name would overwrite an earlier one's figure)
    assert [text for text in taken if list(sysbench_runs._fill(text).fields) != list(
        sysbench_runs._fill_lines(text).fields)] == []
