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
# the message after the first `[pid] ` of a line (journalctl: `stress-ng[123]: `), else the line after `stress-ng: `
_PID = re.compile(r"\[[0-9]{1,20}\]:? +")
_LEVEL = re.compile(r"^stress-ng: [a-z]{2,6}: +")
_ABORTED = re.compile(rf"(?:process \[[0-9]{{1,20}}\] \(({_NAME})\)|({_NAME}): \[[0-9]{{1,20}}\]) aborted early, "
                      r"(?:out of|no) system resources")
_SUMMARY = re.compile(rf"skipped: [0-9]{{1,18}}:((?: {_NAME} \([0-9]{{1,18}}\))+)")
_MARKS = ("stressor will be skipped", "skipping stressor")


def skipped(text: str) -> dict[str, str]:
    """{stressor: what stress-ng said of its skip (`` when only the summary names it)}, in the log's order."""
    found: dict[str, str] = {}
    for mark in _MARKS:
        at = text.find(mark)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            line = text[start:end if end >= 0 else len(text)].strip()
            pid = _PID.search(line)
            msg = line[pid.end():] if pid else _LEVEL.sub("", line)
            name = msg.split(" ", 1)[0].rstrip(":")
            if re.fullmatch(_NAME, name):
                found.setdefault(name, msg[:200])
            at = text.find(mark, at + len(mark))
    if text.find("aborted early") >= 0:
        for m in _ABORTED.finditer(text):
            found.setdefault(m.group(1) or m.group(2), m.group(0))
    if text.find("skipped: ") >= 0:
        for m in _SUMMARY.finditer(text):
            for name in re.findall(rf" ({_NAME}) \(", m.group(1)):
                found.setdefault(name, "")
    return found


def flag(skips: dict[str, str]) -> str:
    said = "; ".join(f"`{why}`" for why in skips.values() if why) or "its `skipped:` summary"
    return (f"SKIPPED: stress-ng skipped the {', '.join(skips)} stressor{'s' if len(skips) > 1 else ''} (not "
            f"supported here, or out of resources: {said}): no figure of {'them' if len(skips) > 1 else 'it'} is "
            "read, those read are the other stressors'")


def failure_detail(skips: dict[str, str]) -> str:
    """Why a run whose every stressor was skipped has no figure."""
    said = "; ".join(f"`{why}`" for why in skips.values() if why) or "see its log"
    return (f"stress-ng skipped its {', '.join(skips)} stressor{'s' if len(skips) > 1 else ''} ({said}): it did not "
            "run, so there is no figure; it is not supported on this host (or found no resource)")
