"""Events for `describe`: written on an etcd lease so they expire by themselves.

Repeats of the same (object, reason, message) are folded into one Event whose
count and lastTimestamp grow, as Kubernetes' event correlator does.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from collections import OrderedDict

from google.protobuf.message import Message

from flotilla.api.v1 import core_pb2
from flotilla.store.base import copy_of, meta_of
from flotilla.store.errors import AlreadyExists, Conflict, NotFound, StoreError
from flotilla.store.protocol import ObjectStore

log = logging.getLogger(__name__)

REMEMBERED_EVENTS = 1000
NORMAL = "Normal"
WARNING = "Warning"


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
            await self._record(obj, event_type, reason, message)
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
