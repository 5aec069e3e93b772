"""Failovers that have not finished, for Prometheus (the FlotillaFailoverNotFinished alert,
docs/alerts.md): graceful eviction tasks older than their timeout, and bindings whose
EvictionBlocked condition is True (reason NoPlacement: no cluster can take the evicted replicas).

The leader's binding informers keep, per binding, its tasks' deadlines and whether it is blocked;
the gauges are counted when Prometheus scrapes, since a task turns overdue by time passing, with
no event to say so. Only a running leader's view counts: a standby exports 0.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from prometheus_client import Gauge

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding
from flotilla.api.conditions import is_true
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.keys import object_key
from services.eviction.graceful import EVICTION_BLOCKED

TASKS_OVERDUE = Gauge(
    "flotilla_eviction_tasks_overdue",
    "Graceful eviction tasks older than their timeout (gracePeriodSeconds, else --graceful-eviction-timeout)",
)
BLOCKED_BINDINGS = Gauge(
    "flotilla_eviction_blocked_bindings",
    "Bindings whose EvictionBlocked condition is True: no cluster can take the replicas evicted from one",
)


class Unfinished:
    """One leader term's view. Fed from the event loop, read by the scrape thread: hence the lock."""

    def __init__(self, clock: Clock, timeout: timedelta) -> None:
        self.clock = clock
        self.timeout = timeout.total_seconds()
        self._lock = threading.Lock()
        # Seconds since the epoch: read off every binding event, where datetimes cost more.
        self._deadlines: dict[str, tuple[float, ...]] = {}
        self._blocked: set[str] = set()

    def observe(self, kind: str, event: WatchEvent[Binding]) -> None:
        binding = event.obj
        key = f"{kind}:{object_key(binding.metadata.namespace, binding.metadata.name)}"
        gone = event.type is EventType.DELETED
        deadlines = () if gone else self._deadlines_of(binding)
        blocked = not gone and is_true(binding.status.conditions, EVICTION_BLOCKED)
        with self._lock:
            if deadlines:
                self._deadlines[key] = deadlines
            else:
                self._deadlines.pop(key, None)
            if blocked:
                self._blocked.add(key)
            else:
                self._blocked.discard(key)

    def _deadlines_of(self, binding: Binding) -> tuple[float, ...]:
        """When each task's timeout runs out, as services/eviction/assessment.py reckons it. A task
        not stamped yet is new; one with suppressDeletion waits for a person by design."""
        deadlines = []
        for task in binding.spec.graceful_eviction_tasks:
            if not task.HasField("creation_timestamp") or task.HasField("suppress_deletion"):
                continue
            timeout = task.grace_period_seconds if task.HasField("grace_period_seconds") else self.timeout
            created = task.creation_timestamp
            deadlines.append(created.seconds + created.nanos / 1e9 + timeout)
        return tuple(deadlines)

    def overdue(self) -> int:
        now = self.clock.now().timestamp()
        with self._lock:
            return sum(1 for deadlines in self._deadlines.values() for deadline in deadlines if deadline <= now)

    def blocked(self) -> int:
        with self._lock:
            return len(self._blocked)


_live: set[Unfinished] = set()
_live_lock = threading.Lock()


def start(view: Unfinished) -> None:
    with _live_lock:
        _live.add(view)


def stop(view: Unfinished) -> None:
    with _live_lock:
        _live.discard(view)


def _views() -> list[Unfinished]:
    with _live_lock:
        return list(_live)


TASKS_OVERDUE.set_function(lambda: sum(v.overdue() for v in _views()))
BLOCKED_BINDINGS.set_function(lambda: sum(v.blocked() for v in _views()))
