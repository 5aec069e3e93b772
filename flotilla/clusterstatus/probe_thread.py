"""Push members' health probes on an event loop of their own, in a thread of its own.

A probe is one GET, bounded by the probe timeout; on the status service's main loop it would
queue behind everything else that loop does (collections, etcd reads and writes, decoding), so
on a busy plane a member answering in milliseconds could still time out there, and enough of
those in a row is a false failover (docs/performance.md, "How the health thresholds protect a
loaded control plane"). This loop does nothing but `/readyz`, each member over one kept-alive
connection; the caller awaits the answer from its own loop, and `ClusterProber` decides with it.
A thread and not a process: a probe needs well under a millisecond of the interpreter, and a
thread waiting for the GIL gets it within milliseconds (the switch interval is 5 ms; one long
call in C, decoding a big list, holds it a little longer), far inside any probe timeout.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvloop

from flotilla.clusterstatus.member_http import MemberSession
from flotilla.member import Credentials, Health


class ProbeThread:
    def __init__(self, timeout: float, keepalive: float, observe: Callable[[float], None] | None = None) -> None:
        # Used only on the thread's loop.
        self._http = MemberSession(timeout, keepalive)
        # Each probe's seconds as this thread saw them (a metric: must be thread-safe).
        self._observe = observe
        # uvloop whatever the service's own loop: a hundred members' probes a second over TLS cost
        # less in libuv's sockets and TLS than in asyncio's.
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="health-probes", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    def start(self) -> None:
        self._thread.start()

    async def health(self, credentials: Credentials) -> Health:
        """Probe on the probe loop; the answer comes back to the calling loop (cancelling the
        wait cancels the probe)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._probe(credentials), self._loop))

    async def _probe(self, credentials: Credentials) -> Health:
        started = time.perf_counter()
        try:
            return await self._http.health(credentials)
        finally:
            if self._observe is not None:
                self._observe(time.perf_counter() - started)

    async def close(self) -> None:
        if not self._thread.is_alive():
            if self._thread.ident is None:  # never started
                self._loop.close()
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._http.close(), self._loop))
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join)

    async def __aenter__(self) -> ProbeThread:
        self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()
