"""Pure-function parsers of benchmark output: sysbench, stress-ng, hdparm, fio, and the control-plane
timelines of volume-churn and pod-startup (JSON lines, `timeline`).

`parse_run` reads one run (the parser service); `parse_text` reads a log file offline
(`podtax parse`). Both return a :class:`Parsed` or raise :class:`ParseFailure` with a stable
reason code — never a silent zero:

- ``nonzero-exit``   the tool exited non-zero (or was killed) and no more specific reason was found
- ``fatal``          the tool reported a fatal error (sysbench ``FATAL:``, stress-ng ``error:``, fio err)
- ``empty``          no output at all (sysbench: nor after its command line; --verbosity below 3 prints nothing)
- ``truncated``      the report starts but its figures are missing (cut or killed)
- ``permission-denied``  the tool could not open its device or file, or was denied a right it needed
  (stress-ng --sched fifo without root)
- ``unknown-format`` no known report (or several runs / tools mixed in one log: pass the test)
- ``unsupported-version``  sysbench 0.4.x: recognized and rejected, naming the version (iperf 3.1.2's broken JSON)
- ``bad-argument``   the tool rejected its command line
- ``wrong-tool``     the log was written by another tool (or another sysbench test / stressor)
- ``implausible``    the report's figures are beyond what the hardware can do (a broken build's timing)
- ``refused`` / ``unreachable`` / ``timeout`` / ``server-busy``  a network benchmark (iperf3,
  sockperf) could not reach its server: connection refused, no route, no answer, server busy

Lines starting with ``#podtax `` (the provenance block) are removed first; CRLF and lone CR
become LF; a BOM, trailing NULs (a file preallocated, then cut by a crash) and ANSI colour codes are
dropped. When stdout was cut mid-line (no final newline) and stderr follows, the cut line is dropped:
joined with a newline it would pass for a whole line, `1770.62` cut to `177` for a figure.
Metric naming per tool is documented in each module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import ModuleType
from typing import Any

from podtax import templates
from podtax.benchwrap import PREFIX
from podtax.parsers import detect, fio, hdparm, iperf3, sockperf, stressng, sysbench, sysbench_runs, timeline
from podtax.parsers.base import Parsed, ParseFailure, version_from
from podtax.provenance import split as _split_provenance

__all__ = ["PARSER_VERSION", "TOOLS", "ParseFailure", "Parsed", "parse_run", "parse_text", "tool_of"]

PARSER_VERSION: str = "1.0.0"
_MODULES: dict[str, ModuleType] = {"sysbench": sysbench, "stress-ng": stressng, "hdparm": hdparm, "fio": fio,
                                   "iperf3": iperf3, "sockperf": sockperf, "timeline": timeline}
TOOLS: tuple[str, ...] = tuple(_MODULES)
_ALIASES = {"stressng": "stress-ng", "stress_ng": "stress-ng"}
TEST_TOOL: dict[str, str] = {t.name: t.tool for t in templates.REGISTRY.values() if t.tool in _MODULES}
TEST_TOOL.update(dict.fromkeys(timeline.PRIMARY, timeline.TOOL))  # the control-plane templates
_SPECIFIC = frozenset({"fatal", "bad-argument", "permission-denied", "unsupported-version", "wrong-tool",
                       "refused", "unreachable", "timeout", "server-busy"})
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colour and cursor codes (`ESC[2;35m`, `ESC[0m`, `ESC[K`)


def tool_of(name: str) -> tuple[str, str | None]:
    """`sysbench-cpu` -> ("sysbench", "sysbench-cpu"); `fio` -> ("fio", "fio"); `sysbench` -> ("sysbench", None)."""
    if name in TEST_TOOL:
        return TEST_TOOL[name], name
    tool = _ALIASES.get(name, name)
    if tool in _MODULES:
        return tool, None
    known = ", ".join(sorted({*TEST_TOOL, *_MODULES}))
    raise ValueError(f"unknown tool or test {name!r}; use one of: {known}")


def _clean(text: str) -> str:
    if not text:
        return ""
    if text[0] == "\ufeff":
        text = text[1:]
    if text[-1:] == "\0":
        text = text.rstrip("\0")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text:  # only a BOM, NULs (a preallocated file never written) or colour codes
        return ""
    # `|` and `>` are looked for alone first: one memchr, 3-10x cheaper than the two-character search when absent
    if ((text[0] in "0123456789[>" or (text.find("|", 0, 80) >= 0 and text.find(" |", 0, 80) >= 0))
            and _LINE_PREFIX.match(text)) \
            or (text.find(">", 0, 400) >= 0 and text.find("\n>", 0, 400) >= 0):  # quoted in a mail after an
        text = _unprefix(text)  # unquoted `On ... wrote:`
    if _holds(text, PREFIX):
        text = _split_provenance(text)[0]
    return text


# What a log collector writes before every line: `kubectl logs --timestamps` (and CI runners)
# `2024-05-01T12:00:00.123456789Z `, `kubectl logs --prefix` `[pod/name/container] `, docker compose `svc-1  | `,
# a test framework's job log (avocado: `12:06:53 DEBUG| [stdout] `) and a mail's quote markers (`> `, `>> `, `> > `)
_LINE_PREFIX = re.compile(r"(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
                          r"(?:Z|[+-][0-9]{2}:?[0-9]{2}) ?|\[pod/[^\]\n]+\] ?|[\w.-]+ +\| ?|(?:>[ \t]?)+"
                          r"|[0-9]{2}:[0-9]{2}:[0-9]{2} [A-Z]{3,8}\| (?:\[std(?:out|err)\] )?)")


def _unprefix(text: str) -> str:
    """The log without its collector's prefix, when at least 90% of its non-empty lines carry one."""
    lines = text.split("\n")
    out, hits = [], 0
    for line in lines:
        m = _LINE_PREFIX.match(line)
        if m:
            hits += 1
            line = line[m.end():]
        out.append(line)
    return "\n".join(out) if hits >= 0.9 * sum(1 for line in lines if line) else text


def _holds(text: str, word: str) -> bool:
    """`word in text`, found by its first character (memchr) when that one is rare: `in` looks at the
    last one, and a needle ending in a space crawls through a 100 KiB YAML report (50 µs, not 2)."""
    at = text.find(word[0])
    for _ in range(8):
        if at < 0:
            return False
        if text.startswith(word, at):
            return True
        at = text.find(word[0], at + 1)
    return at >= 0 and word in text[at:]


def _blank(text: str) -> bool:
    """`not text.strip()` without copying the text (isspace stops at the first other character)."""
    return not text or text.isspace()


def _join(stdout: str, stderr: str) -> str:
    out, err = _clean(stdout), _clean(stderr)
    if _blank(err):
        return out
    if _blank(out):
        return err
    if not out.endswith("\n"):  # stdout cut mid-line (a size cap, a kill): its last line is not whole
        out = out[:out.rfind("\n") + 1]
    return out + err


def parse_run(test: str, stdout: str, stderr: str = "", exit_code: int | None = 0,
              requested: Mapping[str, Any] | None = None, recorded_version: str | None = None) -> Parsed:
    """Parse one run of template `test` (stdout and stderr as captured, exit status, parameters)."""
    tool = TEST_TOOL.get(test)
    if tool is None:
        known = ", ".join(sorted(TEST_TOOL))
        raise ParseFailure("unknown-format", f"no parser for test {test!r}; parsers exist for: {known}")
    return _run(tool, test, _join(stdout, stderr), exit_code, requested, recorded_version)


def parse_text(text: str, tool: str | None = None) -> Parsed:
    """Parse a saved log offline; `tool` is a tool or template name, or None to autodetect."""
    text = _clean(text)
    if tool is not None:
        name, test = tool_of(tool)
    else:
        if _blank(text):
            raise ParseFailure("empty", "the log is empty")
        found = detect.tools_in(text)
        if not found:
            raise ParseFailure("unknown-format", "no sysbench, stress-ng, hdparm, fio, iperf3, sockperf or timeline "
                                                 "output recognized; pass --tool if you know which tool wrote it")
        if len(found) > 1:
            raise ParseFailure("unknown-format", f"the log mixes output of {' and '.join(found)}; pass --tool "
                                                 "to parse one of them")
        name, test = found[0], None
        return _run(name, test, text, 0, None, None, found)
    return _run(name, test, text, 0, None, None)


def _run(tool: str, test: str | None, text: str, exit_code: int | None, requested: Mapping[str, Any] | None,
         recorded_version: str | None, found: list[str] | None = None) -> Parsed:
    if _blank(text):
        if exit_code != 0:
            raise ParseFailure("nonzero-exit", f"{tool} {_status(exit_code)} and printed nothing")
        quiet = f": {sysbench_runs.QUIET}" if tool == sysbench.TOOL else ""  # --verbosity below 3 prints nothing
        raise ParseFailure("empty", f"{tool} printed nothing (stdout and stderr are empty){quiet}")
    if exit_code != 0:
        try:
            _parse(tool, test, text, requested, recorded_version, found)
        except ParseFailure as failure:
            if failure.reason in _SPECIFIC:
                raise ParseFailure(failure.reason, f"{failure.detail} ({tool} {_status(exit_code)})") from None
        raise ParseFailure("nonzero-exit", f"{tool} {_status(exit_code)}; its figures are not trusted — read "
                                           "its output for the cause")
    return _parse(tool, test, text, requested, recorded_version, found)


def _status(exit_code: int | None) -> str:
    return "was killed (no exit status)" if exit_code is None else f"exited with status {exit_code}"


def _parse(tool: str, test: str | None, text: str, requested: Mapping[str, Any] | None,
           recorded_version: str | None, found: list[str] | None = None) -> Parsed:
    try:
        parsed: Parsed = _MODULES[tool].parse(text, test, requested, recorded_version)
    except ParseFailure as failure:
        if failure.reason in ("unknown-format", "truncated") and _escaped(text):
            raise ParseFailure("unknown-format", f"the log's line breaks are escaped (`\\n`: a log kept as a JSON "
                                                 "string, a Python bytes literal or Ansible's stdout): unescape it "
                                                 f"first (e.g. `jq -r .stdout`); as it is: {failure.detail}") from None
        # Only a log the parser rejects is checked for another tool's signature (cheap path first).
        if failure.reason in ("unknown-format", "truncated", "wrong-tool"):
            found = detect.tools_in(text) if found is None else found
            if found and tool not in found:
                raise ParseFailure("wrong-tool", f"expected {tool} output, but the log was written by "
                                                 f"{' and '.join(found)}") from None
        raise
    if tool == timeline.TOOL:  # the backend's version is no tool build: both sides differ on purpose
        return parsed
    if test is not None:
        primary = _primary_metric(test, requested, parsed)
        for m in parsed.metrics:  # a loop, not any() over a generator: 2x cheaper over fio's dozens of metrics
            if m.name == primary:
                break
        else:
            old = any(f.startswith("SENDER_ONLY: ") for f in parsed.flags)  # the layout before iperf3 3.11
            raise ParseFailure("unsupported-version" if old else "unknown-format",
                               f"the {test} report has no {primary} figure{_hint(primary, parsed)}")
    return _with_version(parsed, recorded_version)


def _escaped(text: str) -> bool:
    """The log's line breaks are written `\\n` (more of them than real ones). A log without a backslash, nearly
    every one, is ruled out by one memchr (the count of `\\n` scans it all: 2-4 µs a failure)."""
    if text.find("\\") < 0:
        return False
    escaped = text.count("\\n")
    return escaped >= 3 and escaped > text.count("\n")


def _hint(primary: str, parsed: Parsed) -> str:
    """What to do when the primary metric is missing but a sibling says why."""
    if primary.startswith("rtt_") and any(m.name == "latency_" + primary[4:] for m in parsed.metrics):
        return (": this report gives the one-way latency (sockperf without --full-rtt, its latency_* figures); "
                "rerun with --full-rtt for round-trip times")
    groups = next((f for f in parsed.flags if f.startswith("GROUPS: ")), None)
    if groups:  # fio jobs in several groups: no figure stands for the whole run
        return f": {groups.removeprefix('GROUPS: ')}; run one group per log"
    sender = next((f for f in parsed.flags if f.startswith("SENDER_ONLY: ")), None)
    if sender:  # iperf3 before 3.11, UDP
        return f": {sender.removeprefix('SENDER_ONLY: ')}; rerun with iperf3 3.11 or later"
    return ""


def _primary_metric(test: str, requested: Mapping[str, Any] | None, parsed: Parsed) -> str:
    if test == "fio":
        rw = str((requested or {}).get("rw") or parsed.echoed.get("rw") or "")
        return fio.primary_metric(rw, {m.name for m in parsed.metrics})
    if test == "sysbench-memory":  # the template's rule, with the operation the run used
        operation = str((requested or {}).get("operation") or parsed.echoed.get("operation") or "write")
        return _template_primary(test, ("operation", operation))
    return _template_primary(test)


@lru_cache(maxsize=256)
def _template_primary(test: str, param: tuple[str, str] | None = None) -> str:
    """The template's primary metric for its default parameters, or with `param` (name, value) set."""
    template = templates.REGISTRY[test]
    params = template.params()
    if param is not None:
        params = params.model_copy(update={param[0]: param[1]})
    return template.primary_metric(params)


def _with_version(parsed: Parsed, recorded_version: str | None) -> Parsed:
    if not recorded_version:
        return parsed
    version, build = version_from(recorded_version)
    flags = parsed.flags
    if parsed.tool_version and version and parsed.tool_version != version:
        flags += (f"VERSION_MISMATCH: the log says {parsed.tool} {parsed.tool_version}, the run recorded "
                  f"{version}",)
    if not parsed.tool_build and (not parsed.tool_version or parsed.tool_version == version):
        tool_build = build
    else:
        tool_build = parsed.tool_build
    return Parsed(parsed.tool, parsed.tool_version or version, tool_build, parsed.metrics, parsed.echoed, flags)
