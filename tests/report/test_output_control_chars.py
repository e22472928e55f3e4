"""Control characters from the bus in every output: a store written before names were checked holds a node
`\\x1b]0;...\\x07` (an ESC sequence that retitles a terminal) or a unit `ms\\x1b[2J` (one that clears it) as it
got them. The terminal report, `podtax compare` and `podtax results` printed them raw (only the report's warnings
were made printable); the HTML page carried them into its SVG plots, which were then not well-formed XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from podtax import events

from tests.report.conftest import cli_output, serve_batches
from tests.report.test_report_hostile import T0, named_events

NODE = "node-1\x1b]0;owned\x07"
UNIT = "ms\x1b[2J"
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _hostile(campaign: str, t0=T0) -> list[events.Envelope]:
    return named_events(campaign, NODE, UNIT, "1.0\x1b[8m", t0)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    batches = [_hostile("ctl"), _hostile("ctl2", T0 + timedelta(days=1))]
    with serve_batches(tmp_path_factory.mktemp("ctl"), batches) as u:
        yield u


@pytest.mark.parametrize("argv", [("report", "ctl"), ("report", "ctl", "--all-metrics"), ("compare", "ctl", "ctl2"),
                                  ("results", "--campaign", "ctl"), ("scores",)])
def test_terminal_outputs_write_control_characters_as_text(url, argv, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", url)
    out = cli_output(*argv)
    assert CONTROL.findall(out) == [], out
    assert "\\x1b" in out  # shown, as text


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)


def test_html_page_and_its_plots_hold_no_control_character(url, tmp_path: Path):
    cli_output("report", "ctl", "--html", str(tmp_path / "r.html"), "--api", url)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert CONTROL.findall(page) == []
    parser = _Parser()
    parser.feed(page)
    assert "script" not in parser.tags
    plots = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert plots
    for svg in plots:
        ET.fromstring(svg)  # well-formed XML: an ESC in a unit made each plot's XML invalid
    assert "\\x1b]0;owned\\x07" in page
