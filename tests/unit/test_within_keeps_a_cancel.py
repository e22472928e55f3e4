"""A cancel (Ctrl-C: asyncio.run cancels the command's task) that lands as a NATS step completes is kept by
deadline.within (fx4, session 54; review r4 of 8dd47041): Python 3.11's asyncio.wait_for then returns the step's
result and drops the cancel, so `podtax import` went on publishing and exited 0 without a word (2 of 20 SIGINTs in
r4's probe). Real asyncio, no NATS needed: the step's future is completed and the task cancelled in one turn."""

from __future__ import annotations

import asyncio

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
