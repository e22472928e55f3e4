"""A Ctrl-C (asyncio.run cancels the command's task) while Bus.connect waits for a NATS server that accepts and never
answers stops the connect (fxN, session 55; review rN of f826d59f). nats-py's Client.connect opens its socket in
asyncio.wait_for; a cancel landing as that completes is dropped (Python 3.11's wait_for returns the result), and the
connect retries for ever (max_reconnect_attempts=-1): Bus.connect's own asyncio.wait_for then waited for it for ever,
and `podtax campaign status` hung at Ctrl-C (1 run of 8 under a terminal's killpg).

Real asyncio, real nats-py, a real listener: the cancel is delivered the moment the real asyncio.open_connection has
connected (the one part wrapped), which is that race made certain rather than 1 in 8. The loop is driven by hand, not
asyncio.run, so a connect that never stops fails the test instead of hanging it."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from podtax.bus import Bus


def test_a_ctrl_c_nats_py_drops_while_connecting_still_stops_bus_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = asyncio.open_connection
    command: list[asyncio.Task[Bus]] = []

    async def open_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        streams = await real_open(*args, **kwargs)
        if not command[0].cancelling():
            command[0].cancel()  # the Ctrl-C, as nats-py's wait_for is about to get the connection
        return streams

    monkeypatch.setattr(asyncio, "open_connection", open_then_ctrl_c)

    async def scenario(url: str) -> list[asyncio.Task[Any]]:
        command.append(asyncio.ensure_future(Bus.connect(url, "test", timeout=30, auth={})))
        await asyncio.wait(command, timeout=20)  # a bound for a hang, not a speed: it stops in about 0.1 s
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]

    loop = asyncio.new_event_loop()
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts (the backlog) and never answers
            left = loop.run_until_complete(scenario(f"nats://127.0.0.1:{listener.getsockname()[1]}"))
            # before: Bus.connect still waiting, nats-py's connect still retrying
            assert command[0].cancelled(), f"Bus.connect did not stop: {command[0]}"
            assert left == [], f"tasks left running: {left}"
    finally:
        loop.close()
