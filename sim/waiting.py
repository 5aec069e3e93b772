"""Waiting for whichever of several things happens first."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from flotilla.aio.tasks import cancel_and_wait


async def wait_first(*aws: Coroutine[Any, Any, Any]) -> int:
    """Run `aws` until one finishes; cancel the rest; return the index of the one that finished
    (its exception, should it have failed, is raised)."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(*tasks)
    first = next(i for i, task in enumerate(tasks) if task in done)
    tasks[first].result()
    return first
