"""One probe of one cluster -> the status to publish, with the threshold filter's memory.

`ClusterProber` keeps, per cluster, the filter state and a short probe
history (for inspection). It does not write: it returns a `StatusUpdate`
that the caller applies to a freshly read Cluster with one compare-and-swap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flotilla.aio.clock import Clock
from flotilla.api.conditions import TRUE, get_condition, set_condition
from flotilla.api.limits import truncate_message
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.collect import Collected, Member, apply_collected
from flotilla.clusterstatus.collect import collect as collect_from
from flotilla.clusterstatus.observation import READY, ReadyObservation, client_failure, observe
from flotilla.clusterstatus.thresholds import Thresholds, ThresholdState, filter_ready
from flotilla.member import MemberError
from flotilla.store.errors import StoreError


@dataclass(frozen=True)
class ProbeRecord:
    """One probe, as the failover trace's span shows it. `error` quotes the member's answer, cut
    to 1 KiB (`truncate_message`) as it is recorded: the history is kept per cluster and each
    record becomes a span event's attribute."""

    time: datetime
    online: bool
    healthy: bool
    observed: ReadyObservation
    published: ReadyObservation
    error: str = ""


@dataclass(frozen=True)
class StatusUpdate:
    """What a probe decided; `apply` writes it into any fresh copy of the status. `collect_due`:
    the probe left a due collection to its caller (`probe(..., collect=False)`)."""

    ready: ReadyObservation
    collected: Collected | None
    now: datetime
    collect_due: bool = False

    def apply(self, status: cluster_pb2.ClusterStatus) -> bool:
        before = status.SerializeToString(deterministic=True)
        set_condition(status.conditions, READY, self.ready.status, self.ready.reason, self.ready.message, self.now)
        if self.collected is not None:
            apply_collected(status, self.collected, self.now)
        return status.SerializeToString(deterministic=True) != before

    def changes(self, status: cluster_pb2.ClusterStatus) -> bool:
        """Whether `apply` would change this status (left as it is)."""
        copy = cluster_pb2.ClusterStatus()
        copy.CopyFrom(status)
        return self.apply(copy)


@dataclass(frozen=True)
class CollectionUpdate:
    """A collection made apart from the probes (`ClusterProber.collect`): it leaves Ready to them,
    and is written only while the cluster is Ready."""

    collected: Collected
    now: datetime

    def apply(self, status: cluster_pb2.ClusterStatus) -> bool:
        ready = persisted_ready(status)
        if ready is None or ready.status != TRUE:
            return False
        before = status.SerializeToString(deterministic=True)
        apply_collected(status, self.collected, self.now)
        return status.SerializeToString(deterministic=True) != before


def persisted_ready(status: cluster_pb2.ClusterStatus) -> ReadyObservation | None:
    # The writer's side: the whole condition, to compare with the next probe, not cluster_ready.
    condition = get_condition(status.conditions, READY)
    if condition is None:
        return None
    return ReadyObservation(condition.status, condition.reason, condition.message)


class ClusterProber:
    def __init__(self, clock: Clock, thresholds: Thresholds, history: int = 20, collect_period: float = 0.0) -> None:
        self.clock = clock
        self.thresholds = thresholds
        self._states: dict[str, ThresholdState] = {}
        self._history: dict[str, deque[ProbeRecord]] = {}
        self._history_len = history
        self.collect_period = timedelta(seconds=collect_period)
        # When each cluster's status was last collected in full.
        self._collected: dict[str, datetime] = {}

    def forget(self, name: str) -> None:
        self._states.pop(name, None)
        self._history.pop(name, None)
        self._collected.pop(name, None)

    def _collect_due(self, name: str, persisted: ReadyObservation | None, now: datetime) -> bool:
        """Collecting lists every node and pod and walks discovery, where the probe is one GET:
        at every probe of a hundred busy members it is most of the status service's work and
        of the members', and the probes would queue behind it. A cluster turning Ready is
        collected at once, whatever the period."""
        last = self._collected.get(name)
        return (last is None or persisted is None or persisted.status != TRUE
                or now - last >= self.collect_period)

    def state(self, name: str) -> ThresholdState | None:
        return self._states.get(name)

    def history(self, name: str) -> list[ProbeRecord]:
        return list(self._history.get(name, ()))

    async def probe(
        self,
        name: str,
        status: cluster_pb2.ClusterStatus,
        connect: Callable[[], Awaitable[Member]],
        collect: bool = True,
        at: datetime | None = None,
    ) -> StatusUpdate:
        """Probe, and collect if due (`collect=False`: leave a due collection to the caller, as
        `collect_due`, and count it as made now, so the next probes do not ask for it again).
        `at`: the time the probe stands for (its tick), when not now."""
        now = at if at is not None else self.clock.now()
        online = healthy = False
        error = ""
        client: Member | None = None
        try:
            client = await connect()
        except StoreError:
            # The plane could not read the member's Secret (it does not decode, etcd is away):
            # that says nothing of the member, so it is no failure, and no probe is made.
            raise
        except Exception as e:  # whatever stops a client being built obeys the threshold too
            error = truncate_message(str(e) or type(e).__name__)
            observed = client_failure(error)
        else:
            health = await client.health()
            online, healthy = health.online, health.healthy
            observed = observe(online, healthy)
        persisted = persisted_ready(status)
        shown, self._states[name] = filter_ready(observed, persisted, self._states.get(name), now, self.thresholds)
        collected = None
        ready = client is not None and online and healthy and shown.status == TRUE
        due = ready and client is not None and self._collect_due(name, persisted, now)
        if due and not collect:
            self._collected[name] = now
        elif due and client is not None:
            try:
                collected = await collect_from(client)
            except MemberError as e:
                error = truncate_message(str(e))
            else:
                self._collected[name] = now
        self._history.setdefault(name, deque(maxlen=self._history_len)).append(
            ProbeRecord(now, online, healthy, observed, shown, error)
        )
        return StatusUpdate(shown, collected, now, collect_due=due and not collect)

    async def collect(self, client: Member) -> CollectionUpdate:
        """A collection apart from the probe; MemberError if the member did not answer."""
        now = self.clock.now()
        return CollectionUpdate(await collect_from(client), now)
