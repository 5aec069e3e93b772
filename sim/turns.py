"""API requests take turns: at most one starts its work per pass of the event loop.

asyncio runs every callback that is ready in one pass before it polls the sockets again. When a
control plane's status collection sends a hundred list requests at once, all hundred are ready
in the same pass, and a `/readyz` probe arriving meanwhile is not even read until they are all
answered. Taking turns puts a poll of the sockets between any two requests' work, so a health
probe (which takes no turn) waits for at most one request's work, not for the whole burst.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Turns:
    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._passing = False

    async def take(self) -> None:
        """Returns when it is this caller's turn (in a later pass of the loop, first come first served)."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._next_pass()
        await future

    def _next_pass(self) -> None:
        if not self._passing and self._waiting:
            self._passing = True
            asyncio.get_running_loop().call_soon(self._give)

    def _give(self) -> None:
        self._passing = False
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():  # a request whose client left gave up its turn
                future.set_result(None)
                break
        self._next_pass()
