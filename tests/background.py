"""A component's `run()` kept going for the length of a block (shared by tests)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def in_background(run: Coroutine[Any, Any, object]) -> AsyncIterator[asyncio.Task[object]]:
    """`run` (say `manager.run()`) as a task while the block lasts; cancelled and awaited when
    it ends, whatever it ended with."""
    task = asyncio.create_task(run)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
