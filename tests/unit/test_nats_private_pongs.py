"""natsclose.drain_within ends nats-py's waits for PONGs through Client._pongs, a private attribute (nats-py 2.16):
if a nats-py upgrade renames it, drain_within's loop over it finds nothing and a close of a server that hangs after
the PING waits nats-py's whole drain again (15 s) without a word. This says so at once."""

from __future__ import annotations

from nats.aio.client import Client


def test_nats_py_keeps_its_pong_waits_in_a_list_named_pongs() -> None:
    assert isinstance(getattr(Client(), "_pongs", None), list), (
        "nats.aio.client.Client()._pongs is gone or no longer a list: natsclose.drain_within relies on it; revisit "
        "natsclose on this nats-py upgrade")
