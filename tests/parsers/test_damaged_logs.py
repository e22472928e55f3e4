"""Damaged copies of every corpus log that parses: the parser must refuse them (ParseFailure) or give
the intact log's figures. Never a different number, never NaN or infinity, never another exception,
and the log's primary metric is kept. Damage (tests/parsers/damage.py, seeded): truncation at every
line boundary and inside numbers (`1770.62` -> `177`), a line dropped, duplicated or swapped with the
next, CRLF, a BOM, trailing NULs, ANSI codes and stderr warnings, stdout and stderr split
differently, and two runs in one capture (refused, or flagged with one run's figures unmixed).

One accepted difference: hdparm `-Tt` cut right after its cached timing is exactly what `hdparm -T`
prints; its echoed mode says `cached`, and its `read_mb_per_second` is compared with the cached figure.
And one more: a stress-ng log of one row beside a skipped stressor (`cpu_...`, named as where the stressor ran) whose
skip line was dropped is what a run of that one stressor prints; its figures are compared under unprefixed names.
And a fio text log cut or damaged before a job's `issued` line gives its IOPS as fio printed them (`IOPS=2782` for
64 I/Os in 23 ms, 2782.6; `IOPS=27.6k`): within 1 IOPS, or 0.6% from 1000 on (fio 3.26's print; fio 2.17-2.19 and
3.0-3.25 print some up to 9% off, none in these corpora's cases), of the intact log's, which is read exactly from
that line; TEXT_OUTPUT says the text's figures are rounded.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from podtax import templates
from podtax.parsers import Parsed, ParseFailure, parse_run, parse_text
from podtax.parsers.base import make_metric

from tests.parsers import damage
from tests.parsers.corpus_index import CORPUS, HINTS, log_files, read_text, rel

SEED = int(os.environ.get("PODTAX_DAMAGE_SEED", "20240917"))
NET = CORPUS.parent / "corpus-net"
HWBENCH = CORPUS / "stress-ng" / "hwbench"


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    hint: str | None
    parsed: Parsed
    test: str | None  # the template whose parse_run reads it, when there is one
    primary: str | None


def _test_of(hint: str | None, parsed: Parsed) -> str | None:
    if hint in templates.REGISTRY:
        return hint
    guess = {"sysbench": f"sysbench-{parsed.echoed.get('test')}", "stress-ng": "stress-ng-cpu"}.get(parsed.tool,
                                                                                                   parsed.tool)
    return guess if guess in templates.REGISTRY else None


def _primary(test: str | None, parsed: Parsed) -> str | None:
    """The template's primary metric, when the intact log has it (a multi-stressor table has none)."""
    if test is None:
        return None
    template = templates.REGISTRY[test]
    fields = template.params.model_fields
    update = {k: parsed.echoed[k] for k in ("operation", "rw") if k in parsed.echoed and k in fields}
    name = template.primary_metric(template.params().model_copy(update=update))
    return name if name in parsed.values() else None


def _outcome(parse: Callable[[], Parsed]) -> Parsed | ParseFailure:
    try:
        return parse()
    except ParseFailure as failure:
        return failure


def _corpus() -> list[tuple[str, str, str | None]]:
    logs = [(rel(p), read_text(p), hint) for p in log_files() for hint in (None, *HINTS.get(rel(p), ()))]
    for p in sorted(NET.glob("*.*")):
        if p.suffix in (".json", ".log"):
            logs += [(f"corpus-net/{p.name}", read_text(p), hint) for hint in (None, p.name.split("-")[0])]
    return logs


def _cases() -> list[Case]:
    cases = []
    for name, text, hint in _corpus():
        parsed = _outcome(lambda text=text, hint=hint: parse_text(text, hint))
        if isinstance(parsed, Parsed):
            test = _test_of(hint, parsed)
            if test is not None and not isinstance(_outcome(lambda t=test, x=text: parse_run(t, x)), Parsed):
                test = None  # e.g. a multi-stressor table: no stress-ng-cpu run
            cases.append(Case(name, text, hint, parsed, test, _primary(test, parsed)))
    return cases


CASES = _cases()


def _id(case: Case) -> str:
    return f"{case.name}[{case.hint or 'auto'}]"


def problems(intact: Parsed, primary: str | None, got: Parsed | ParseFailure | Exception) -> list[str]:
    """What is wrong with a damaged log's outcome (nothing for a ParseFailure or the intact figures)."""
    if isinstance(got, ParseFailure):
        return []
    if isinstance(got, Exception):
        return [f"raised {type(got).__name__}: {got}"]
    want = intact.values()
    if intact.tool == "hdparm" and got.echoed.get("mode") != intact.echoed.get("mode"):
        kind = ("direct_" if got.echoed.get("direct") else "") + str(got.echoed.get("mode"))
        want["read_mb_per_second"] = want.get(f"{kind}_read_mb_per_second", math.nan)  # a `-T` log (see top)
    lone = intact.echoed.get("stressors")
    if intact.tool == "stress-ng" and isinstance(lone, str) and "," not in lone and _skipped(intact) \
            and not _skipped(got):  # its skip line lost (see top)
        want.update({k.removeprefix(lone.replace("-", "_") + "_"): v for k, v in intact.values().items()})
    found = []
    rounded = intact.tool == "fio" and any(f.startswith("TEXT_OUTPUT: ") for f in got.flags)  # see top
    for name, value in got.values().items():
        if not math.isfinite(value):
            found.append(f"{name} = {value}")
        elif name not in want:
            found.append(f"{name} = {value}: the intact log has no such metric")
        elif value != want[name] and not (rounded and name.endswith("_iops")
                                           and abs(value - want[name]) < max(1.0, 0.006 * want[name])):
            found.append(f"{name} = {value}, intact {want[name]}")
    if primary is not None and primary not in got.values():
        found.append(f"primary {primary} missing")
    return found


def _skipped(parsed: Parsed) -> bool:
    return any(f.startswith("SKIPPED: ") for f in parsed.flags)


def _check(parse: Callable[[], Parsed]) -> Parsed | ParseFailure | Exception:
    try:
        return parse()
    except ParseFailure as failure:
        return failure
    except Exception as exc:  # noqa: BLE001 - any other exception is what this test reports
        return exc


def _variants(case: Case) -> Iterator[tuple[str, str]]:
    rng = random.Random(f"{SEED}:{case.name}:{case.hint}")
    yield from damage.truncations(case.text, rng, mid_line=20)
    yield from damage.line_edits(case.text, limit=300, rng=rng)
    yield from damage.encodings(case.text, rng, places=10)


def _report(bad: list[str]) -> str:
    return f"{len(bad)} damaged variants gave other figures, first:\n" + "\n".join(bad[:8])


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_damaged_log_gives_the_intact_figures_or_a_parse_failure(case: Case) -> None:
    bad, parsed = [], 0
    for label, text in _variants(case):
        got = _check(lambda text=text: parse_text(text, case.hint))
        parsed += isinstance(got, Parsed)
        bad += [f"{label}: {p}" for p in problems(case.parsed, case.primary, got)]
    assert not bad, _report(bad)
    assert parsed > 0  # some damage (a CRLF log, a dropped blank line) leaves the log readable


@pytest.mark.parametrize("case", [c for c in CASES if c.test], ids=_id)
def test_stdout_and_stderr_split_or_cut_differently(case: Case) -> None:
    assert case.test is not None
    intact = parse_run(case.test, case.text)
    primary = _primary(case.test, intact)
    assert primary is not None
    rng = random.Random(f"{SEED}:streams:{case.name}:{case.hint}")
    outcomes = [(label, (out, err)) for label, out, err in damage.splits(case.text, rng, 10)]
    # stdout cut (a size cap, a kill) while stderr goes on: the cut line must not pass for a whole one
    outcomes += [(f"stdout {label}", (cut, damage.WARNINGS[0] + "\n"))
                 for label, cut in damage.truncations(case.text, rng, mid_line=5)]
    bad = []
    for label, (out, err) in outcomes:
        got = _check(lambda out=out, err=err: parse_run(case.test, out, err))
        bad += [f"{label}: {p}" for p in problems(intact, primary, got)]
    assert not bad, _report(bad)


def _same_run(got: Parsed, *logs: Parsed) -> bool:
    return any(got.values() == log.values() for log in logs)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_two_runs_in_one_capture_are_refused_or_flagged(case: Case) -> None:
    """Never averaged, mixed or silently one of them: refused, or flagged with one run's figures whole."""
    others = [c for c in CASES if c.parsed.tool == case.parsed.tool and c.name != case.name and c.hint is None]
    bad = []
    for label, text in damage.concatenations(case.text, [c.text for c in others]):
        got = _check(lambda text=text: parse_text(text, case.hint))
        if isinstance(got, ParseFailure):
            continue
        if isinstance(got, Exception):
            bad.append(f"{label}: raised {type(got).__name__}: {got}")
            continue
        new_flags = set(got.flags) - set(case.parsed.flags)
        other = others[int(label.split("#")[1].split()[0])].text if "#" in label else case.text
        alone = _outcome(lambda other=other: parse_text(other, case.hint))  # the other run, read the same way
        if not new_flags or not _same_run(got, case.parsed, *([alone] if isinstance(alone, Parsed) else [])):
            bad.append(f"{label}: accepted ({sorted(got.values().items())[:3]}...), flags {sorted(new_flags)}")
    assert not bad, _report(bad)


def _hwbench_pairs() -> list[Path]:
    return sorted(p.parent for p in HWBENCH.rglob("stderr")
                  if isinstance(_outcome(lambda p=p: parse_run("stress-ng-cpu", read_text(p.parent / "stdout"),
                                                               read_text(p))), Parsed))


@pytest.mark.parametrize("run", _hwbench_pairs(), ids=lambda p: p.relative_to(HWBENCH).as_posix())
def test_hwbench_streams_swapped_or_cut(run: Path) -> None:
    """Real stdout/stderr pairs (stress-ng 0.13-0.21 print the table on one or the other)."""
    out, err = read_text(run / "stdout"), read_text(run / "stderr")
    intact = parse_run("stress-ng-cpu", out, err)
    rng = random.Random(f"{SEED}:{run.name}")
    pairs = [("streams swapped", err, out)]
    pairs += [(f"stdout {label}", cut, err) for label, cut in damage.truncations(out, rng, mid_line=5)]
    pairs += [(f"stderr {label}", out, cut) for label, cut in damage.truncations(err, rng, mid_line=5)]
    bad = []
    for label, o, e in pairs:
        got = _check(lambda o=o, e=e: parse_run("stress-ng-cpu", o, e))
        bad += [f"{label}: {p}" for p in problems(intact, "bogo_ops_per_second_real", got)]
    assert not bad, _report(bad)


def test_the_corpus_cases_cover_every_tool_and_the_checker_sees_a_cut_number() -> None:
    assert {c.parsed.tool for c in CASES} == {"sysbench", "stress-ng", "hdparm", "fio", "iperf3", "sockperf"}
    assert len(CASES) > 40 and all(c.primary for c in CASES if c.hint in templates.REGISTRY)
    case = next(c for c in CASES if c.name == "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log")
    cut = case.text[:case.text.index("1770.72") + 3]  # `1770.72` -> `177`
    assert cut in dict(damage.truncations(case.text, random.Random(SEED), 0)).values()
    shrunk = Parsed(case.parsed.tool, None, None, tuple(make_metric(m.name, 177.0, m.unit, m.higher_is_better)
                                                        if m.name == "bogo_ops_per_second_usr_sys" else m
                                                        for m in case.parsed.metrics))
    assert problems(case.parsed, case.primary, shrunk) == ["bogo_ops_per_second_usr_sys = 177.0, intact 1770.72"]
    refused = _check(lambda: parse_text(cut, None))
    assert isinstance(refused, ParseFailure) and refused.reason == "truncated"
