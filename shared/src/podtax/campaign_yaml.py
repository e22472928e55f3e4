"""Reading a campaign file's YAML for podtax.campaign: the loader, one-line problems for text that is not
valid YAML (with the fix of the usual mistakes), keys repeated in a mapping (which YAML loaders drop
without a word), and the line a validation error's location points at in the composed node tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Walk the composed YAML node tree along a pydantic error location; return a 1-based line."""
    line = node.start_mark.line + 1 if node else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            nxt = None
        if nxt is None:
            continue  # union tags and the like: stay on the deepest node found
        node = nxt
        line = node.start_mark.line + 1
    return line


UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")  # before UTF-16's: FF FE starts both little-endian marks
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def bom_encoding(raw: bytes) -> str | None:
    """The encoding a UTF-32 or UTF-16 byte-order mark at the start of `raw` names (the longer mark first), or None."""
    return "UTF-32" if raw.startswith(UTF32_BOMS) else "UTF-16" if raw.startswith(UTF16_BOMS) else None


def decode(raw: bytes) -> str:
    """A campaign file's text: UTF-8 (a byte-order mark kept for YAML to drop), or UTF-32 or UTF-16 when it starts
    with their byte-order mark (Windows PowerShell's `>` writes UTF-16; YAML allows all three). Raises
    UnicodeDecodeError."""
    encoding = bom_encoding(raw)
    return raw.decode(encoding.lower() if encoding else "utf-8")


def encoding_problem(raw: bytes, exc: UnicodeDecodeError, filename: str) -> str:
    """One line `file:line: not UTF-8 text (byte 0xNN at column C ...)` with the fix: it named a byte offset only
    (audit hH). The column counts characters (what an editor shows), not bytes."""
    if encoding := bom_encoding(raw):
        return (f"{filename}: not {encoding} text after its {encoding} byte-order mark ({exc.reason} at byte "
                f"{exc.start}); save the file as UTF-8")
    start = raw.rfind(b"\n", 0, exc.start) + 1
    line = raw.count(b"\n", 0, exc.start) + 1
    column = len(raw[start:exc.start].decode("utf-8", errors="replace")) + 1
    return (f"{filename}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02X} at column {column}: {exc.reason}); "
            "save the file as UTF-8 (in another encoding such as Latin-1 or Windows-1252, convert it: iconv -f "
            "latin1 -t utf-8)")


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster


def yaml_problem(exc: yaml.YAMLError, text: str, filename: str) -> str:
    """One line `file:line: not valid YAML: what`, with the fix of the usual mistakes (tabs, `---`)."""
    if isinstance(exc, yaml.reader.ReaderError):  # its own str() spans two lines
        line = text.count("\n", 0, exc.position) + 1
        return (f"{filename}:{line}: not valid YAML: character U+{exc.character:04X} ({exc.reason}); "
                f"remove it")
    mark = getattr(exc, "problem_mark", None)
    where = f"{filename}:{mark.line + 1}" if mark else filename
    what = " ".join(str(p) for p in (getattr(exc, "context", None), getattr(exc, "problem", None) or exc) if p)
    if mark and "\t" in (text.splitlines()[mark.line:mark.line + 1] or [""])[0]:
        what += " (YAML does not allow tabs for indentation: use spaces)"
    elif "single document" in what:
        what += " (a campaign file holds one document: remove the `---` line and what follows it)"
    return f"{where}: not valid YAML: {what}"


def too_long_number(text: str) -> str | None:
    """`line: a number of N digits (123456...): ...` for the first integer in `text` that YAML cannot convert (past
    Python's limit of 4,300 digits): its ValueError named sys.set_int_max_str_digits(), no line and no fix. None
    when `text` holds no such integer. Composes `text` (no value is built); each node is visited once."""
    for node in _nodes(yaml.compose(text, Loader=LOADER)):
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
            digits = sum(c.isdigit() for c in node.value)
            if digits > 4300:
                return (f"{node.start_mark.line + 1}: a number of {digits:,} digits ({node.value[:12]}...): no field "
                        "takes a number so long: write the value the field needs")
    return None


def value_problem(exc: ValueError, text: str) -> str:
    """What follows a file's name when YAML raised a ValueError building a value: `:line: a number of N digits ...`
    for an integer past 4,300 digits, else `: ` and YAML's own words (an impossible date such as 2024-13-01 says
    'month must be in 1..12') and how to keep such a value text."""
    if long := too_long_number(text):
        return f":{long}"
    return f": {exc} (YAML reads an unquoted value of this form as a date or a number: quote it if it is text)"


def duplicate_key(root: yaml.Node | None) -> str | None:
    """`line: key 'x' appears twice ...` for the first mapping that repeats a key (YAML loaders keep the last
    value without a word). Each node is visited once, so aliases cost nothing ("billion laughs")."""
    for node in _nodes(root):
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    line = key.start_mark.line + 1
                    if (key.tag, key.value) in first:
                        return (f"{line}: key {key.value!r} appears twice in the same mapping (first on line "
                                f"{first[key.tag, key.value]}); keep one of them")
                    first[key.tag, key.value] = line
    return None


def _nodes(root: yaml.Node | None) -> Iterator[yaml.Node]:
    """Every node under `root` in document order, each once: an alias repeats a node, never its visit, so a
    "billion laughs" file costs its size."""
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            stack += [part for pair in reversed(node.value) for part in reversed(pair)]
        elif isinstance(node, yaml.SequenceNode):
            stack += reversed(node.value)
