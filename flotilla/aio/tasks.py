"""Stopping tasks without losing a cancellation of our own."""

from __future__ import annotations

import asyncio
from typing import Any


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
