"""`podtax import` skips building an event whose log is small enough that it cannot exceed the NATS
limit: the bound (importer.size_bound) must hold for the worst logs and row fields."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from podtax import events
from podtax.cli import importer
from podtax.safefiles import decode_log

EVERY_BYTE = bytes(range(256)) * 40
LOGS = {  # name -> bytes: control characters (6 bytes of JSON each), undecodable bytes, UTF-16, emoji
    "controls": b"\x01\x1f\"\\" * 2000,
    "every-byte": EVERY_BYTE,
    "not-utf8": b"\x80\xc3" * 3000,
    "utf16": b"\xff\xfe" + "\x00\x01\u2028\U0001F600".encode("utf-16-le") * 1000,
    "emoji": "\U0001F600\u00e9".encode() * 2000,
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("long_fields", [False, True], ids=["short-fields", "long-fields"])
def test_the_size_bound_holds_for_hostile_logs_and_fields(tmp_path: Path, name: str, long_fields: bool) -> None:
    data = LOGS[name]
    path = tmp_path / "log"
    path.write_bytes(data)
    long = "x\x01" * 300 if long_fields else ""
    row = importer.Row(2, "f" + long.replace("\x01", "é"), str(path), "n" * (253 if long_fields else 1), "host",
                       "sysbench-cpu", {"threads": 1, "note" + long[:120:2]: "\"\\" + long},  # a key is bounded
                       datetime(2024, 3, 1, tzinfo=UTC), long or None)
    campaign = "c" * (50 if long_fields else 1)
    event = importer.build_event(row, campaign, 2**31 - 1)
    size = len(events.encode(event))
    assert len(decode_log(data)) <= len(data)  # the bound may use the file's bytes for its characters
    assert size <= importer.size_bound(len(event.data.stdout), row, campaign)
    assert size <= importer.size_bound(len(data), row, campaign)


def test_a_small_log_is_not_built_before_publishing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """check_events parses each log once and builds only the events that might not fit."""
    for name in ("small.log", "big.log"):
        (tmp_path / name).write_bytes(b"\x01" * (100 if name == "small.log" else 174_300))
    (tmp_path / "m.csv").write_text("file,node,env,test,params,started_at,tool_version\n"
                                    "small.log,n1,host,sysbench-cpu,threads=1 time=5,2024-03-01T10:00:00Z,\n"
                                    "big.log,n1,host,sysbench-cpu,threads=1,2024-03-01T10:00:00Z,\n")
    rows = importer.read_manifest(tmp_path / "m.csv")
    built: list[str] = []
    real = importer._event

    def counting(row: importer.Row, *args):  # noqa: ANN002, ANN202
        built.append(row.file)
        return real(row, *args)

    monkeypatch.setattr(importer, "_event", counting)
    assert importer.check_events(rows, "c", 1_048_576) == [5.0, None]
    assert built == ["big.log"]  # 174,300 control characters: 6 bytes of JSON each, near 1 MiB (just below)
    with pytest.raises(importer.ManifestError, match=r"line 3: big.log does not fit one NATS message \(1,04"):
        importer.check_events(rows, "c", 1_000_000)
