"""Cluster-level faults and what they do to a request before the API sees it.

One port serves every cluster, so "connection refused" for a single cluster is simulated by
closing the connection without an answer (clients see the server disconnect).
"""

from __future__ import annotations

import asyncio
from enum import StrEnum

from flotilla.aio.clock import Clock
from sim.waiting import wait_first

# An unreachable cluster holds requests at most this long (on the Clock), so a client without a
# timeout cannot hang forever.
UNREACHABLE_CAP = 600.0
DEFAULT_LATENCY = 1.0


class Fault(StrEnum):
    NONE = "none"
    DOWN = "down"  # connection dropped without an answer
    UNHEALTHY = "unhealthy"  # /readyz and /healthz answer 500, the rest works
    UNREACHABLE = "unreachable"  # requests hang until the client gives up
    SLOW = "slow"  # every request is delayed by `latency`


def parse_fault(text: str) -> Fault:
    """A fault name as the admin API takes it; "recover" clears the fault."""
    if text == "recover":
        return Fault.NONE
    try:
        return Fault(text)
    except ValueError:
        choices = ", ".join([*(f.value for f in Fault if f is not Fault.NONE), "recover"])
        raise ValueError(f"unknown fault {text!r} (one of: {choices})") from None


class FaultState:
    def __init__(self) -> None:
        self.fault = Fault.NONE
        self.latency = 0.0
        self._changed: asyncio.Event | None = None

    def set(self, fault: Fault | str, latency: float | None = None) -> None:
        fault = parse_fault(fault) if isinstance(fault, str) else fault
        if latency is not None and latency < 0:
            raise ValueError("latency must not be negative")
        self.fault = fault
        self.latency = (latency if latency is not None else DEFAULT_LATENCY) if fault is Fault.SLOW else 0.0
        # Wake requests held by "unreachable" so they see the new state.
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def admit(self, clock: Clock, stopping: asyncio.Event) -> bool:
        """Apply the network-level fault to one request: False means drop the connection."""
        while True:
            if stopping.is_set() or self.fault is Fault.DOWN:
                return False
            if self.fault is Fault.SLOW:
                await wait_first(clock.sleep(self.latency), stopping.wait())
                return not stopping.is_set()
            if self.fault is not Fault.UNREACHABLE:
                return True
            if self._changed is None:
                self._changed = asyncio.Event()
            which = await wait_first(self._changed.wait(), stopping.wait(), clock.sleep(UNREACHABLE_CAP))
            if which == 2:
                return False
