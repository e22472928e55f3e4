"""The forms a stress-ng log line comes in, read into the plain one (`stress-ng: <level>: [pid] msg`):
`--timestamp` (`stress-ng: 04:14:26.35 info:  [pid] ...`), `--log-brief` (no prefix at all), and a
timestamp behind another prefix; and the lines in the common form read in one regex pass (plain_lines). Pure functions,
used by stressng.py (detect.py uses BRIEF_HEADER)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_BRIEF_PREFIX = "stress-ng: info:  [0] "
BRIEF_HEADER = r"^stressor +bogo ops "  # the table header of a `--log-brief` log (detect.py looks for it too)
_BRIEF_WORDS = re.compile(rf"^dispatching hogs: |{BRIEF_HEADER}", re.M)
# The fraction can be negative: Cygwin's stress-ng printed `00:00:00.-99` for lines logged by a stressor.
_LINE_TIME = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}\.-?[0-9]{2} ")
_TIMESTAMP = re.compile(r"^stress-ng: [0-9]{2}:[0-9]{2}:[0-9]{2}\.-?[0-9]{2} (?=[a-z]+: )", re.M)


def plain(text: str) -> str | None:
    """A log written with `--timestamp` (`stress-ng: 04:14:26.35 info:  [pid] ...`) or `--log-brief` (no
    `stress-ng: info:  [pid] ` prefix at all, but its dispatch line or table header) in the plain form;
    None for any other log. Tried only when no line had the plain form."""
    if _TIMESTAMP.search(text):
        return _TIMESTAMP.sub("stress-ng: ", text)
    if _BRIEF_WORDS.search(text):
        return "\n".join(_BRIEF_PREFIX + line for line in text.split("\n"))
    return None


def split_line(raw: str) -> tuple[str, str] | None:
    """`stress-ng: metrc: [7111] cpu  3000 ...` -> ("metrc", "cpu  3000 ..."); None for other lines."""
    if not raw.startswith("stress-ng:"):
        return None
    rest = raw[10:].lstrip(" ")
    if rest[:1].isdigit():  # `--timestamp` behind another prefix (a build log's `[00:00:39] `): `09:57:37.17 fail:`
        stamp = _LINE_TIME.match(rest)
        rest = rest[stamp.end():] if stamp else rest
    colon = rest.find(":")
    level = rest[:colon]
    if colon <= 0 or not level.isalpha():
        return None
    msg = rest[colon + 1:].strip()
    if msg.startswith("["):
        close = msg.find("]")
        if close > 0 and msg[1:close].isdigit():
            msg = msg[close + 1:].lstrip()
    return level, msg


# Where split_line reads a line from (see behind): `stress-ng:`, spaces, a `--timestamp` time, a level and its colon
_SPLITS_AT = re.compile(r"stress-ng: *+(?:[0-9]{2}:[0-9]{2}:[0-9]{2}\.-?[0-9]{2} )?+([^\W\d_]++):")


def behind(raw: str) -> int:
    """Where the stress-ng line behind other text on `raw` starts (0: none), for a line split_line does not read:
    the first `stress-ng: ` after one of ` \t:]#$>` (a log collector's prefix, a prompt), then each next one after
    such a character while split_line would not read from there either, the last one tried if none reads. The same
    place as trying split_line at each in turn (one slice of the line, not one per `stress-ng: `: a line of
    thousands of them was read in quadratic time and ended in RecursionError)."""
    at, last = raw.find("stress-ng: ", 1), 0
    while at > 0 and raw[at - 1] in " \t:]#$>":
        last = at
        m = _SPLITS_AT.match(raw, at)
        if m is not None and m.group(1).isalpha():
            return at
        at = raw.find("stress-ng: ", at + 1)
    return last


# The common form, read in one regex pass (see plain_lines): each whole line of the log is one of these,
# behind `stress-ng: info:  [pid] ` or `stress-ng: metrc: [pid] ` (single spaces between the words of a
# figure line, nothing after its last character).
_P = r"stress-ng: (?:info:  |metrc: )\[[0-9]{1,20}+\] ++(?=\S)"
# the first words of a message stressng._line acts on (the table's header, misc metrics, stressng_state.HANDLERS keys):
# stressng._NEXT does not pass over a line starting with one (`note:`: 0.17's `note: 97 metrics were set, only
# reporting first 96 metrics` among the miscellaneous metrics, no metric of its own)
RESERVED_WORDS = (r"stressor|miscellaneous|dispatching|successful|unsuccessful|failed:|skipped:|passed:|metrics"
                  r"|setting|defaulting|note:")
_RESERVED = rf"(?:{RESERVED_WORDS}|stress-ng)"
_NAME = r"[^\s(]\S*+"
# a line no part of _line acts on: its second word (if any) is none float() reads (no row, no misc metric)
_OTHER = rf"{_NAME}(?: ++[a-hj-mo-zA-HJ-MO-Z:(\[/'\"][^\n]*+)?+(?<=\S)$"
_TOKENS = re.compile(
    rf"^(?:{_P}(?:(?!{_RESERVED})(?:"
    # 1, 2: a table row as stress-ng prints it: bogo ops, 5 or 6 figures with 2 decimals, (RSS Max)
    rf"({_NAME}) ++([0-9]++(?: ++[0-9]++\.[0-9]{{2}}){{5}}+(?: ++[0-9]++\.[0-9]{{2}}(?: ++[0-9]++)?+)?+)$"
    rf"|({_OTHER}(?:\n{_P}(?!{_RESERVED}){_OTHER})*+)"  # 3: one or more such lines
    # 4, 5, 6: a miscellaneous metric whose description starts as no number does (a row's figures after the
    # first, printed or --sn, are read by stressng._line: a row among misc metrics is a row)
    rf"|({_NAME}) ++([0-9]++(?:\.[0-9]++)?+) ++(?![-+.\d])(\S[^\n]*+(?<=\S))$"
    # 7: a HANDLERS line, in the forms whose second word no float() reads either
    rf")|((?:dispatching hogs:|(?:un)?successful run completed|(?:setting|defaulting) to )[^\n]*+(?<=\S)$"
    r"|(?:failed|skipped|passed): [0-9]{1,18}+(?:: [^\n]*+(?<=\S))?+$|metrics untrustworthy: [0-9]{1,18}+$)"
    r"|(stressor[^\n]*?bogo ops[^\n]*+(?<=\S))$"  # 8: the table's header
    r"|(\()[^\n]*+(?<=\S)$"  # 9: its units line
    r"|(miscellaneous metrics:)$"  # 10
    r"))|^([^\n]+)",  # 11: any other line (plain_lines leaves it to stressng._line)
    re.M)


def plain_lines(s: Any, text: str, end: int, handlers: Mapping[str, Callable[[Any, str], None]],
                line: Callable[[Any, str, int], int]) -> int:
    """stressng._line (`line`) over each line of text[:end] (`end` at a newline): the lines in the common form
    (_TOKENS) are read here, in one regex pass, and each other line (or one where _line would do more: a row
    in a misc block, a misc metric inside a table) by `line`. Fills `s` (a stressng_state.Scan) and returns
    the state after the last line, as _line does."""
    state = 0
    rows, misc = s.rows, s.misc
    read = False
    for m in _TOKENS.finditer(text, 0, end):  # a token's kind is its last group (no group holds another)
        kind = m.lastindex
        if kind == 11:
            state = line(s, m[11], state)
            continue
        read = True
        if kind == 3:
            state = 0
        elif kind == 6:  # a miscellaneous metric
            if state == 2:
                misc.append((m[4], float(m[5]), m[6]))
            elif state == 1:
                state = line(s, m[0], state)
        elif kind == 2:  # a table row
            if state == 1:
                rows.append((m[1], list(map(float, m[2].split()))))
            elif state == 2:
                state = line(s, m[0], state)
        elif kind == 7:
            said = m[7]
            state = 0
            handlers[said[:said.find(" ")]](s, said)
        elif kind == 8:
            header = m[8]
            s.header, state = s.header + 1, 1
            s.columns = 6 + ("CPU used per" in header) + ("RSS Max" in header)
        elif kind == 10:
            state = 2
    if read:  # a line in the common form is one _line counts as seen (blank lines give no token)
        s.seen = True
    return state
