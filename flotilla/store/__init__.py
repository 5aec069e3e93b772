"""Object stores (etcd, in-memory), informers, leases, leader election, endpoints, events."""

from flotilla.store.base import KeyEvent, ListResult, WatchKind
from flotilla.store.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    Forbidden,
    NotFound,
    StoreError,
    Unavailable,
    Undecodable,
)
from flotilla.store.informer import Handler, Informer
from flotilla.store.memory import MemoryStore
from flotilla.store.objects import Store
from flotilla.store.protocol import ObjectStore

__all__ = [
    "AlreadyExists",
    "Compacted",
    "Conflict",
    "Forbidden",
    "Handler",
    "Informer",
    "KeyEvent",
    "ListResult",
    "MemoryStore",
    "NotFound",
    "ObjectStore",
    "Store",
    "StoreError",
    "Unavailable",
    "Undecodable",
    "WatchKind",
]
