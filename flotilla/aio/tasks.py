"""Stopping tasks without losing a cancellation of our own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel `tasks` (None ones are skipped) and return once each has ended.

    The usual `task.cancel(); with suppress(CancelledError): await task` also swallows a
    cancellation of the caller, should one arrive during that await: the caller then carries on
    as if never cancelled, and whoever cancelled it waits for it forever. Here the caller's own
    cancellation always propagates. The tasks' own exceptions are not raised; a caller that
    cares reads `task.exception()`, and asyncio reports any nobody read.
    """
    live = [task for task in tasks if task is not None]
    for task in live:
        task.cancel()
    if live:
        await asyncio.wait(live)


async def bounded(awaitable: Awaitable[T], seconds: float) -> T:
    """`awaitable`, or TimeoutError after `seconds`. Not `asyncio.wait_for`, which before Python
    3.12 can swallow a cancellation that arrives as the awaited call completes: the caller then
    carries on as if never cancelled (a replica told to stop goes on holding its work)."""
    async with asyncio.timeout(seconds):
        return await awaitable
