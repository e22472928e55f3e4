"""The forms a stress-ng log line comes in, read into the plain one (`stress-ng: <level>: [pid] msg`):
`--timestamp` (`stress-ng: 04:14:26.35 info:  [pid] ...`), `--log-brief` (no prefix at all), and a
timestamp behind another prefix. Pure functions, used by stressng.py (detect.py uses BRIEF_HEADER)."""

from __future__ import annotations

import re

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
