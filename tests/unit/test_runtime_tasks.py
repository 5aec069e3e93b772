"""Stopping tasks: a cancellation that arrives while the caller waits for them is never lost."""

from __future__ import annotations

import asyncio

import pytest

from flotilla.aio.tasks import cancel_and_wait
from sim.waiting import wait_first


class SlowToStop:
    """A coroutine that, once cancelled, needs `release` before it ends; `stopping` says it
    got there."""

    def __init__(self) -> None:
        self.stopping = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopping.set()
            await self.release.wait()
            raise


async def cancel_while_it_stops(caller: asyncio.Task[object], child: SlowToStop) -> None:
    await asyncio.wait_for(child.stopping.wait(), 10)
    caller.cancel()
    child.release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 10)


async def test_cancel_and_wait_keeps_the_callers_own_cancellation() -> None:
    child = SlowToStop()
    task = asyncio.create_task(child.run())
    await asyncio.sleep(0)

    async def stop_then_carry_on() -> str:
        await cancel_and_wait(task)
        await asyncio.sleep(0)
        return "carried on after being cancelled"

    caller = asyncio.create_task(stop_then_carry_on())
    await cancel_while_it_stops(caller, child)
    assert task.cancelled()


async def test_cancel_and_wait_skips_none_and_does_not_raise_a_tasks_error() -> None:
    async def fail() -> None:
        raise ValueError("boom")

    failed = asyncio.create_task(fail())
    await asyncio.sleep(0)
    await cancel_and_wait(None, failed)
    assert isinstance(failed.exception(), ValueError)


async def test_wait_first_cancelled_while_cleaning_up_stays_cancelled() -> None:
    # The sim's timer task was stopped at such a moment once, swallowed it, and its server's
    # stop waited forever.
    child = SlowToStop()

    async def at_once() -> None:
        return None

    caller = asyncio.create_task(wait_first(at_once(), child.run()))
    await cancel_while_it_stops(caller, child)


async def test_wait_first_answers_which_finished_and_raises_its_error() -> None:
    async def never() -> None:
        await asyncio.Event().wait()

    async def fail() -> None:
        raise ValueError("boom")

    async def done() -> None:
        return None

    assert await wait_first(never(), done()) == 1
    with pytest.raises(ValueError):
        await wait_first(never(), fail())
