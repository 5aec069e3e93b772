"""Status writes that start from an informer's copy instead of a fresh read from etcd.

Nearly every status write of the executor follows the event that brought its informer the very
version it changes: reading that version again first would double the round trips of each write,
and a failover of a thousand bindings is mostly such writes (a Work applied, then its member
status; the binding's aggregated status; the template's). The compare-and-swap on the copy's
resourceVersion proves it is still what is stored; on a conflict the store's `mutate` takes
over, reading afresh each time.

A copy can lag behind this writer's own last write to the object; deciding from it that there is
nothing to do could skip a write that is due (a status gone A -> B -> A while the informer still
shows A). So the writer remembers, per object, the revision it last wrote, and does not trust a
copy older than that until the informer has caught up. While it lags, the writer starts from the
version it wrote itself, when it still has it: a binding's status is written again and again as
its Works report in quick succession, and reading the binding afresh for each would double their
round trips.
Whatever someone else wrote since fails the compare-and-swap, and its event brings the key back.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf.message import Message

from flotilla.api import keys
from flotilla.store import Conflict, ObjectStore
from flotilla.store.base import ResourceRef, copy_of, meta_of, resource_type_of
from flotilla.store.informer import Informer

M = TypeVar("M", bound=Message)
REMEMBERED = 256  # the writes of the last moment or so: an informer lags by less


class CachedStatusWriter:
    def __init__(self, store: ObjectStore, assume_into: Informer[Any] | None = None) -> None:
        self.store = store
        # Written objects of its resource are assumed into this informer (Informer.assume), so
        # the controllers reading it act on the write without waiting for the watch to bring it.
        self.assume_into = assume_into
        # object key -> the revision this writer last wrote, while the informer is behind it.
        self._written: dict[str, int] = {}
        # The last objects written, newest at the end, as written (a bounded cache: a key that
        # falls out of it is read afresh).
        self._last: OrderedDict[str, Message] = OrderedDict()

    async def mutate(self, ref: ResourceRef[M], namespace: str, name: str, cached: M | None,
                     change: Callable[[M], bool | None]) -> M:
        """As `store.mutate(ref, namespace, name, change, status=True)`, first trying `change` on
        `cached` (an informer's copy, left untouched). NotFound as `mutate` raises it."""
        # By resource too: one writer serves bindings and templates, whose names can meet.
        key = f"{resource_type_of(ref).resource}/{keys.object_key(namespace, name)}"
        base = self._base(key, cached)
        if base is not None:
            obj = copy_of(base)
            if change(obj) is False:
                return base
            try:
                written = await self.store.update_status(obj, original=base)
            except Conflict:
                pass
            else:
                return await self._wrote(ref, key, written)
        return await self._wrote(ref, key, await self.store.mutate(ref, namespace, name, change, status=True))

    def _base(self, key: str, cached: M | None) -> M | None:
        """What to start from: the informer's copy, or this writer's own newer version; None for a
        fresh read."""
        last = self._last.pop(key, None)
        if cached is None:
            self._written.pop(key, None)
            return None
        if int(meta_of(cached).resource_version or 0) >= self._written.get(key, 0):
            self._written.pop(key, None)
            return cached
        if last is not None and meta_of(last).resource_version == str(self._written[key]):
            mine: M = last  # type: ignore[assignment]  # written under this key, so of its type
            return mine
        return None

    async def _wrote(self, ref: ResourceRef[M], key: str, written: M) -> M:
        informer = self.assume_into
        if informer is not None and informer.synced and informer.rt.resource == resource_type_of(ref).resource:
            # The informer now holds this version or a newer one: nothing to remember beside it.
            await informer.assume(written)
            return written
        self._written[key] = int(meta_of(written).resource_version or 0)
        self._last[key] = copy_of(written)  # the caller may edit what it is handed
        while len(self._last) > REMEMBERED:
            self._last.popitem(last=False)
        return written
