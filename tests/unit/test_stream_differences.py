"""A stream made by another podtax version (other limits, or subjects without a newer event family): the warning
names each field that differs; it said only "its limits differ" with the settings, subjects left unsaid."""

from __future__ import annotations

from nats.js.api import StreamConfig
from podtax.busstreams import _differences


def test_each_differing_field_is_named_with_both_values() -> None:
    want = StreamConfig(name="PODTAX", subjects=["podtax.a.>", "podtax.b.>"], max_bytes=20, max_age=60.0)
    have = StreamConfig(name="PODTAX", subjects=["podtax.a.>"], max_bytes=10, max_age=60.0)
    assert _differences(have, want) == ["subjects ['podtax.a.>'] (this service: ['podtax.a.>', 'podtax.b.>'])",
                                        "max_bytes 10 (this service: 20)"]
    same = StreamConfig(name="PODTAX", subjects=["podtax.b.>", "podtax.a.>"], max_bytes=20, max_age=60.0)
    assert _differences(same, want) == []
