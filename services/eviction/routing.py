"""Which eviction keys a binding event affects: pure functions of the event."""

from __future__ import annotations

from flotilla.api.bindings import Binding, binding_key
from flotilla.api.conditions import get_condition
from flotilla.api.keys import object_key
from flotilla.runtime.manager import ToKeys, WatchEvent
from flotilla.store.informer import EventType
from services.eviction.graceful import EVICTION_BLOCKED


def binding(kind: str) -> ToKeys[Binding]:
    return lambda event: [binding_key(kind, object_key(event.obj.metadata.namespace, event.obj.metadata.name))]


def has_eviction_work(event: WatchEvent[Binding]) -> bool:
    """A binding with tasks to age out, or a condition about them to clear."""
    obj = event.obj
    return event.type is not EventType.DELETED and (
        bool(obj.spec.graceful_eviction_tasks) or get_condition(obj.status.conditions, EVICTION_BLOCKED) is not None)
