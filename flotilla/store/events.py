"""Events for `describe`: written on an etcd lease so they expire by themselves.

Every message is cut to `flotilla.api.limits.MAX_MESSAGE_BYTES` (1 KiB, Kubernetes' own cap on
an Event's note): messages carry member clusters' text, and a member answering with megabytes of
it must cost neither etcd nor the queue more than that.

Repeats of the same (object, reason, message) are folded into one Event whose
count and lastTimestamp grow, as Kubernetes' event correlator does. A service writes them
through an `EventQueue`, in the background and at a bounded rate, as client-go's broadcaster
does: a storm of them (a failover of a thousand bindings makes several thousand) neither
slows the passes that record them nor competes with the failover's own writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
from collections import OrderedDict

from google.protobuf.message import Message
from prometheus_client import Counter, Gauge

from flotilla.api.limits import truncate_message
from flotilla.api.v1 import core_pb2
from flotilla.store.base import copy_of, meta_of
from flotilla.store.errors import AlreadyExists, Conflict, NotFound, StoreError
from flotilla.store.protocol import ObjectStore

log = logging.getLogger(__name__)

REMEMBERED_EVENTS = 1000
NORMAL = "Normal"
WARNING = "Warning"

# client-go's maxQueuedEvents: a storm's backlog is written within 1000 / qps seconds (20 s at
# the default 50), so it does not compete with the next storm's, as a longer one would.
MAX_QUEUED_EVENTS = 1000
# Under a storm, Events are written a group at a time: this many seconds' worth of the rate, at
# most MAX_GROUP (etcd takes up to 128 operations in one transaction).
GROUP_SECONDS = 0.25
MAX_GROUP = 100

EVENTS_DROPPED = Counter(
    "flotilla_events_dropped",
    "Events not written because the queue of Events waiting to be written was full",
    ["component"],
)
EVENTS_QUEUED = Gauge(
    "flotilla_events_queued",
    "Events recorded and not yet written (a storm's backlog, drained at --event-qps)",
    ["component"],
)


def _kind(obj: Message) -> tuple[str, str]:
    # Every object the store holds has type fields; Message itself does not declare them.
    return getattr(obj, "kind", ""), getattr(obj, "api_version", "")


def event_name(obj: Message, reason: str, message: str) -> str:
    meta = meta_of(obj)
    identity = f"{_kind(obj)[0]}/{meta.namespace}/{meta.name}/{meta.uid}/{reason}/{message}"
    return f"{meta.name}.{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


class EventRecorder:
    """Best effort: a failed event write is logged, never raised to the reconciler."""

    def __init__(self, store: ObjectStore, component: str, ttl: int = 3600, host: str = "") -> None:
        self.store = store
        self.component = component
        self.ttl = ttl
        self.host = host
        self._lease: int | None = None
        self._lease_granted = 0.0
        # The events this recorder wrote last, newest at the end: a repeat updates its copy.
        self._written: OrderedDict[tuple[str, str], core_pb2.Event] = OrderedDict()

    async def _current_lease(self) -> int:
        # Rotating the lease at half its TTL gives each event between ttl/2 and ttl
        # to live after its last occurrence, with one lease per recorder, not per event.
        now = self.store.clock.monotonic()
        if self._lease is None or now - self._lease_granted > self.ttl / 2:
            self._lease = await self.store.grant_lease(self.ttl)
            self._lease_granted = now
        return self._lease

    async def record(self, obj: Message, event_type: str, reason: str, message: str) -> None:
        try:
            await self._record(obj, event_type, reason, truncate_message(message))
        except StoreError as e:
            log.warning("event=event-write-failed reason=%s error=%s", reason, e)

    async def normal(self, obj: Message, reason: str, message: str) -> None:
        await self.record(obj, NORMAL, reason, message)

    async def warning(self, obj: Message, reason: str, message: str) -> None:
        await self.record(obj, WARNING, reason, message)

    async def _record(self, obj: Message, event_type: str, reason: str, message: str) -> None:
        meta = meta_of(obj)
        namespace = meta.namespace or "default"
        name = event_name(obj, reason, message)
        now = self.store.clock.now().replace(tzinfo=None, microsecond=0)
        lease = await self._current_lease()
        # Most events are new (the name hashes the object's uid, reason and message), so the
        # create is tried first: one round trip where a read before it made two. A repeat this
        # recorder wrote itself is updated from its copy, any other from the event the refused
        # create returns; a conflict reads it afresh.
        stored = self._written.pop((namespace, name), None)
        for _ in range(3):
            try:
                if stored is None:
                    written = await self.store.create(
                        self._new_event(obj, namespace, name, event_type, reason, message, now), lease=lease)
                else:
                    repeat = copy_of(stored)
                    repeat.count += 1
                    repeat.last_timestamp.FromDatetime(now)
                    written = await self.store.update(repeat, lease=lease, original=stored)
            except AlreadyExists as e:
                stored = e.current if isinstance(e.current, core_pb2.Event) else await self.store.try_get(
                    core_pb2.Event, namespace, name)
                continue
            except (Conflict, NotFound):
                stored = await self.store.try_get(core_pb2.Event, namespace, name)
                continue
            self._remember(namespace, name, written)
            return

    def _new_event(self, obj: Message, namespace: str, name: str, event_type: str, reason: str, message: str,
                   now: datetime.datetime) -> core_pb2.Event:
        meta = meta_of(obj)
        event = core_pb2.Event(api_version="v1", kind="Event", type=event_type, reason=reason, message=message,
                               count=1, reporting_component=self.component)
        event.metadata.name, event.metadata.namespace = name, namespace
        ref = event.involved_object
        ref.kind, ref.api_version = _kind(obj)
        ref.namespace, ref.name, ref.uid = meta.namespace, meta.name, meta.uid
        event.source.component = self.component
        event.source.host = self.host
        event.first_timestamp.FromDatetime(now)
        event.last_timestamp.FromDatetime(now)
        return event

    def _remember(self, namespace: str, name: str, event: core_pb2.Event) -> None:
        self._written[(namespace, name)] = event
        while len(self._written) > REMEMBERED_EVENTS:
            self._written.popitem(last=False)


def _reference(obj: Message) -> Message:
    """As much of `obj` as its Event names (kind, apiVersion, namespace, name, uid): what waits in
    the queue, rather than the whole object."""
    ref = type(obj)()
    kind, api_version = _kind(obj)
    if kind or api_version:
        ref.kind, ref.api_version = kind, api_version  # type: ignore[attr-defined]
    meta, into = meta_of(obj), meta_of(ref)
    into.namespace, into.name, into.uid = meta.namespace, meta.name, meta.uid
    return ref


class EventQueue(EventRecorder):
    """An EventRecorder that writes in the background: `record` (and `emit`, for callers that
    are not coroutines) queues the Event and returns at once; `run()` writes the queue, at most
    `qps` a second after a burst of twice qps. Once `capacity` Events wait, new ones are dropped,
    counted in `flotilla_events_dropped_total` and logged, as client-go's broadcaster drops them
    rather than block its caller. Run `run()` for as long as Events are recorded.

    Under a storm the Events go out a group at a time (a quarter of a second's worth), written
    together so that they travel to etcd as one request (flotilla.store.group_commit): one at a
    time, each its own request and raft entry, they would cost etcd and this process several
    times as much for the same rate."""

    def __init__(self, store: ObjectStore, component: str, ttl: int = 3600, host: str = "",
                 qps: float = 50.0, capacity: int = MAX_QUEUED_EVENTS) -> None:
        super().__init__(store, component, ttl, host)
        self.dropped = 0
        self._queue: asyncio.Queue[tuple[Message, str, str, str]] = asyncio.Queue(capacity)
        self._qps = qps
        # A token bucket: a write takes a token; tokens come at qps a second, up to a burst.
        self._burst = max(qps * 2, 1.0)
        self._tokens = self._burst
        self._refilled = store.clock.monotonic()
        self._queued = EVENTS_QUEUED.labels(component)

    async def record(self, obj: Message, event_type: str, reason: str, message: str) -> None:
        self.emit(obj, event_type, reason, message)

    def emit(self, obj: Message, event_type: str, reason: str, message: str) -> None:
        try:
            # Cut before it waits in the queue, whose capacity counts Events, not bytes.
            self._queue.put_nowait((_reference(obj), event_type, reason, truncate_message(message)))
            self._queued.inc()
        except asyncio.QueueFull:
            self.dropped += 1
            EVENTS_DROPPED.labels(self.component).inc()
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event=events-dropped count=%d reason=%s", self.dropped, reason)

    async def run(self) -> None:
        """Write queued Events until cancelled."""
        while True:
            batch = [await self._queue.get()]
            try:
                allowed = await self._take_tokens()
                while len(batch) < allowed and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                self._tokens -= len(batch)
                with contextlib.suppress(StoreError):  # each write below reports it
                    await self._current_lease()  # granted once for the group, not raced for by it
                await asyncio.gather(*(EventRecorder.record(self, *item) for item in batch))
            finally:
                self._queued.dec(len(batch))
                for _ in batch:
                    self._queue.task_done()

    async def _take_tokens(self) -> int:
        """How many of the waiting Events may be written now, once there is at least one token;
        while the queue is long, enough tokens for a group (a quarter of a second's worth)."""
        if self._qps <= 0:
            return MAX_GROUP
        clock = self.store.clock
        self._refill(clock.monotonic())
        wanted = max(1.0, min(self._queue.qsize() + 1.0, self._qps * GROUP_SECONDS))
        if self._tokens < wanted:
            await clock.sleep((wanted - self._tokens) / self._qps)
            self._refill(clock.monotonic())
        return min(MAX_GROUP, int(self._tokens + 1e-9))

    def _refill(self, now: float) -> None:
        self._tokens = min(self._burst, self._tokens + (now - self._refilled) * self._qps)
        self._refilled = now

    async def drain(self) -> None:
        """Until every Event queued so far is written (for tests)."""
        await self._queue.join()


async def events_for(store: ObjectStore, obj: Message) -> list[core_pb2.Event]:
    """Events about one object, oldest first."""
    meta = meta_of(obj)
    listed = await store.list(core_pb2.Event, meta.namespace or "default")
    found = [
        e for e in listed.items
        if e.involved_object.name == meta.name
        and e.involved_object.kind == _kind(obj)[0]
        and e.involved_object.namespace == meta.namespace
    ]
    return sorted(found, key=lambda e: (e.last_timestamp.seconds, e.metadata.name))
