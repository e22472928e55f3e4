"""The stressors stress-ng skipped, and what it said of each (stress-ng.c, the stressors' own `pr_inf_skip`):

- at its start, a stressor not supported here: `apparmor stressor will be skipped, AppArmor is not enabled`,
  `<name>: stressor will be skipped, ...`, `<name> stressor will be skipped, it is not implemented on this system`;
  it is not dispatched (`dispatching hogs: 1 cpu`), and alone it leaves `No stress workers invoked (one or more
  were unsupported)`;
- while it runs, an instance that found no resource: `uprobe: cannot set uprobe_event: ..., skipping stressor`,
  then the parent's `process [10907] (uprobe) aborted early, out of system resources` (0.15) or `uprobe: [10907]
  aborted early, no system resources` (later); its row, if printed (--metrics), is all zeros;
- the summary of 0.15.07 and later: `skipped: 2: apparmor (1) uprobe (1)`.

Pure functions of the log's text."""

from __future__ import annotations

import re

_NAME = r"[a-z0-9][a-z0-9_-]{0,40}"
_NAMED = re.compile(_NAME)
# stress-ng's `[pid] ` before the message (`stress-ng: info:  [10825] apparmor stressor will be skipped`); a log
# collector's own comes first (journalctl: `Jul 28 16:19:31 host stress-ng[10825]: stress-ng: info:  [10825] ...`)
_PID = re.compile(r"\[[0-9]{1,20}\]:? +")
_LEVEL = re.compile(r"stress-ng: [a-z]{2,6}: +")
_ABORTED = re.compile(rf"(?:process \[[0-9]{{1,20}}\] \(({_NAME})\)|({_NAME}): \[[0-9]{{1,20}}\]) aborted early, "
                      r"(?:out of|no) system resources")
_SUMMARY = re.compile(rf"skipped: [0-9]{{1,18}}:((?: {_NAME} \([0-9]{{1,18}}\))+)")
# each mark, and what follows the stressor's name in its message: `vm: gave up ..., skipping stressor` (not `ioport
# cannot access port 0x80, not skipping stressor`), `apparmor stressor will be skipped` or `<name>: stressor will be`
_MARKS = (("stressor will be skipped", (":", " stressor will be skipped")), ("skipping stressor", (":",)))
_SKIPP = {mark: mark.find("skipp") for mark, _ in _MARKS}  # where `skipp` is in each mark


def _message(line: str, at: int) -> str:
    """The message of a log line whose mark is at `at`: after the last `stress-ng: <level>: ` before the mark and
    its `[pid] `; without one (`--log-brief`), after the line's first `[pid] ` (or the whole line)."""
    level = line.rfind("stress-ng: ", 0, at)
    m = _LEVEL.match(line, level) if level >= 0 else None
    if m is not None:
        pid = _PID.match(line, m.end())
        return line[(pid or m).end():]
    pid = _PID.search(line, 0, at)
    return line[pid.end():] if pid else line


def _named(msg: str, after: tuple[str, ...]) -> str:
    """The stressor a skip message names (`vm` of `vm: gave up ...`), or "" when its first word is followed by none
    of `after` (`skipping stressor skipping stressor`: no name)."""
    m = _NAMED.match(msg)
    return m.group(0) if m and msg.startswith(after, m.end()) else ""


def skipped(text: str) -> dict[str, str]:
    """{stressor: what stress-ng said of its skip (`` when only the summary names it)}, in the log's order. Each
    line holding a mark is read once (from its start to its end: linear in the log). Every mark and the summary
    hold `skipp`: its places are found in one pass over the log (one search a mark cost 5 µs in 19 KiB)."""
    places = []
    at = text.find("skipp")
    while at >= 0:  # (no `skipp` starts inside another one)
        places.append(at)
        at = text.find("skipp", at + 5)
    found: dict[str, str] = {}
    for mark, after in _MARKS:
        end = 0
        for at in [at - _SKIPP[mark] for at in places if text.startswith(mark, at - _SKIPP[mark])]:
            if at < end or at < 0:  # the line's first mark only (a negative start: `skipp` near the log's start)
                continue
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = end if end >= 0 else len(text)
            line = text[start:end]
            first = at - start  # the line's first mark: a message names its stressor before it
            if not line.endswith("not " + mark, 0, first + len(mark)):
                msg = _message(line, first).strip()
                name = _named(msg, after)
                if name:
                    found.setdefault(name, msg[:200])
    # Each line holding `aborted early`, searched alone (a match stays on its line): over the whole log, the pattern
    # is tried at every letter (1.5 ms of the 1.8 ms a 20 KiB log took to parse)
    at = text.find("aborted early")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = end if end >= 0 else len(text)
        for m in _ABORTED.finditer(text, start, end):
            found.setdefault(m.group(1) or m.group(2), m.group(0))
        at = text.find("aborted early", end)
    for at in places:  # each summary starts at one (none holds another: no `:` in it after its count)
        m = _SUMMARY.match(text, at) if text.startswith("skipped: ", at) else None
        if m is not None:
            for name in re.findall(rf" ({_NAME}) \(", m.group(1)):
                found.setdefault(name, "")
    return found


def flag(skips: dict[str, str]) -> str:
    said = "; ".join(f"`{why}`" for why in skips.values() if why) or "its `skipped:` summary"
    return (f"SKIPPED: stress-ng skipped the {', '.join(skips)} stressor{'s' if len(skips) > 1 else ''} (not "
            f"supported here, or out of resources: {said}): no figure of {'them' if len(skips) > 1 else 'it'} is "
            "read, those read are the other stressors'")


def partial_flag(skips: dict[str, str]) -> str:
    """SKIPPED for stressors whose rows count bogo ops although stress-ng said it skipped them: some of their
    instances were skipped (0.15.06 prints no count of them: `skipped: N` is 0.15.07's)."""
    said = "; ".join(f"`{why}`" for why in skips.values() if why) or "its `skipped:` summary"
    return (f"SKIPPED: stress-ng skipped some instances of the {', '.join(skips)} stressor"
            f"{'s' if len(skips) > 1 else ''} ({said}): the figures come from fewer instances than dispatched")


def failure_detail(skips: dict[str, str]) -> str:
    """Why a run whose every stressor was skipped has no figure."""
    said = "; ".join(f"`{why}`" for why in skips.values() if why) or "see its log"
    return (f"stress-ng skipped its {', '.join(skips)} stressor{'s' if len(skips) > 1 else ''} ({said}): it did not "
            "run, so there is no figure; it is not supported on this host (or found no resource)")
