"""A cancel (Ctrl-C: asyncio.run cancels the command's task) that lands as a NATS step completes is kept by
deadline.within (fx4, session 54; review r4 of 8dd47041): Python 3.11's asyncio.wait_for then returns the step's
result and drops the cancel, so `podtax import` went on publishing and exited 0 without a word (2 of 20 SIGINTs in
r4's probe). Real asyncio, no NATS needed: the step's future is completed and the task cancelled in one turn."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from podtax.cli.deadline import within


async def test_a_cancel_landing_as_the_step_completes_is_not_dropped() -> None:
    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def step() -> int:
        return await answer

    task = asyncio.create_task(within(step(), "publishing rows 1 to 200", 10))
    for _ in range(3):  # within is waiting on the step
        await asyncio.sleep(0)
    answer.set_result(200)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_a_step_that_completes_uncancelled_gives_its_result() -> None:
    async def step() -> int:
        await asyncio.sleep(0)
        return 200

    assert await within(step(), "publishing rows 1 to 200", 10) == 200


async def test_a_step_that_fails_as_it_is_cancelled_leaves_no_task_exception_never_retrieved() -> None:
    """Ctrl-C while `podtax import` waited on a hung server (its NATS request timing out as the cancel landed): the
    command said 'interrupted: ... nothing was imported', then asyncio printed 'Task exception was never retrieved'
    and a 40-line traceback of nats.errors.TimeoutError (the final CI of session 54): wait_for cancels its step's task
    and waits for it, but never reads the error it ended with."""
    loop = asyncio.get_running_loop()
    said: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: said.append(context))

    async def step() -> int:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise TimeoutError("nats: timeout") from None  # as nats-py's request on a hung server
        return 0

    task = asyncio.create_task(within(step(), "reading the runner's campaigns", 30))
    for _ in range(3):  # within is waiting on the step
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    del task
    gc.collect()
    await asyncio.sleep(0)
    assert not [c for c in said if "never retrieved" in c.get("message", "")], said
