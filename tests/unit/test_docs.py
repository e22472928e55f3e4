"""Docs that match the code: the generated references are up to date (`make docs`)."""

from __future__ import annotations

from pathlib import Path

from podtax import config, events

DOCS = Path(__file__).parents[2] / "docs"


def test_event_reference_is_current() -> None:
    assert (DOCS / "events.md").read_text().strip() == events.reference_markdown().strip(), "run `make docs`"


def test_configuration_reference_is_current() -> None:
    text = (DOCS / "configuration.md").read_text()
    assert text.strip() == config.reference_markdown().strip(), "run `make docs`"
    assert "PODTAX_NATS_URL" in text and "PODTAX_ANALYZER_DB" in text and "PODTAX_SCHEDULER_NAME" in text
