"""Waiting for whichever of several things happens first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


async def wait_first(*aws: Coroutine[Any, Any, Any]) -> int:
    """Run `aws` until one finishes; cancel the rest; return the index of the one that finished."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return next(i for i, task in enumerate(tasks) if task in done)
