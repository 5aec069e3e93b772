"""etcd-backed object store, informers, leases, leader election, endpoints, events."""

from flotilla.store.errors import AlreadyExists, Conflict, NotFound, StoreError, Unavailable
from flotilla.store.informer import EventType, Informer
from flotilla.store.objects import ListResult, Store

__all__ = [
    "AlreadyExists",
    "Conflict",
    "EventType",
    "Informer",
    "ListResult",
    "NotFound",
    "Store",
    "StoreError",
    "Unavailable",
]
