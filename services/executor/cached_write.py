"""Status writes that start from an informer's copy instead of a fresh read from etcd.

Nearly every status write of the executor follows the event that brought its informer the very
version it changes: reading that version again first doubled the round trips of each write, and
a failover of a thousand bindings is mostly such writes (a Work applied, then its member status;
the binding's aggregated status; the template's). The compare-and-swap on the copy's
resourceVersion proves it is still what is stored; on a conflict the store's `mutate` takes over,
reading afresh each time.

A copy can lag behind this writer's own last write to the object; deciding from it that there is
nothing to do could skip a write that is due (a status gone A -> B -> A while the informer still
shows A). So the writer remembers, per object, the revision it last wrote, and does not trust a
copy older than that until the informer has caught up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message

from flotilla.api import keys
from flotilla.store import Conflict, ObjectStore
from flotilla.store.base import ResourceRef, copy_of, meta_of

M = TypeVar("M", bound=Message)


class CachedStatusWriter:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        # object key -> the revision this writer last wrote, while the informer is behind it.
        self._written: dict[str, int] = {}

    async def mutate(self, ref: ResourceRef[M], namespace: str, name: str, cached: M | None,
                     change: Callable[[M], bool | None]) -> M:
        """As `store.mutate(ref, namespace, name, change, status=True)`, first trying `change` on
        `cached` (an informer's copy, left untouched). NotFound as `mutate` raises it."""
        key = keys.object_key(namespace, name)
        if cached is None:
            self._written.pop(key, None)
        elif int(meta_of(cached).resource_version or 0) >= self._written.get(key, 0):
            self._written.pop(key, None)
            obj = copy_of(cached)
            if change(obj) is False:
                return cached
            try:
                return self._wrote(key, await self.store.update_status(obj, original=cached))
            except Conflict:
                pass
        return self._wrote(key, await self.store.mutate(ref, namespace, name, change, status=True))

    def _wrote(self, key: str, written: M) -> M:
        self._written[key] = int(meta_of(written).resource_version or 0)
        return written
