"""Informers: list at a revision, watch from the next, keep a local cache.

Handlers see every change exactly once and in revision order. A broken watch
(etcd restarted, connection lost) resumes from the last revision seen, so
nothing is missed or replayed; a compacted watch relists and reports the
difference between the cache and the new list.

A value that does not decode (another tool wrote garbage under a key, a bad
restore, a flipped bit) never stops an informer: the key is reported once per
write (log line, metric, `on_undecodable`) and every other object keeps flowing.
It is not a deletion: nothing is known of what the key now holds, so the cache
keeps the last good version of it (handlers hear nothing), and a key that never
held a good value in this informer's sight is unknown, not absent: `get` raises
`Undecodable` for it, and `check_complete` for a caller that decides from the
whole list. A later good value is reported as usual (MODIFIED, or ADDED); a
delete in etcd is a DELETED.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, NamedTuple, TypeAlias, TypeVar

from google.protobuf.message import Message
from prometheus_client import Counter

from flotilla.api import keys
from flotilla.api.events import EventType
from flotilla.store.base import (
    KeyEvent,
    ResourceRef,
    WatchKind,
    copy_of,
    decode_object,
    meta_of,
    object_key_of,
    resource_type_of,
)
from flotilla.store.errors import Compacted, StoreError, Undecodable
from flotilla.store.index import Index
from flotilla.store.objects import unopened_reason
from flotilla.store.protocol import ObjectStore

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

UNDECODABLE_OBJECTS = Counter(
    "flotilla_store_undecodable_objects",
    "Stored values an informer skipped because they do not decode as their kind",
    ["resource"],
)


# (event, the object as it now is (as it was, for DELETED), the previous object or None)
Handler: TypeAlias = Callable[[EventType, M, M | None], Awaitable[None] | None]
IndexFunc: TypeAlias = Callable[[M], builtins.list[str]]
# (etcd key, what is wrong with its value)
UndecodableCallback: TypeAlias = Callable[[str, str], Awaitable[None] | None]


class _Packed(NamedTuple):
    """An object as stored: its bytes and the revision that wrote them (its resourceVersion)."""

    revision: int
    value: bytes


class Informer(Generic[M]):
    def __init__(
        self,
        store: ObjectStore,
        ref: ResourceRef[M],
        namespace: str | None = None,
        retry_backoff: tuple[float, float] = (0.05, 2.0),
        on_undecodable: UndecodableCallback | None = None,
        compact: bool = False,
    ) -> None:
        self.store = store
        self.rt = resource_type_of(ref)
        self.namespace = namespace
        self.prefix = keys.etcd_prefix(self.rt.resource, namespace if self.rt.namespaced else None)
        # compact: each object is kept as its stored bytes and decoded when read, at about a third
        # of the memory of the decoded message (tens of MiB per ten thousand objects) for a few
        # microseconds per read. Every read then hands out a copy of its own.
        self._compact = compact
        self._cache: dict[str, M | _Packed] = {}
        self._indexers: dict[str, IndexFunc[M]] = {}
        self._indices: dict[str, Index] = {}
        self._handlers: builtins.list[Handler[M]] = []
        self._synced = asyncio.Event()
        self._backoff = retry_backoff
        self._on_undecodable = on_undecodable
        # Keys whose stored value does not decode, each with its etcd key: reported once per
        # write, kept at their last good version if there was one, unknown otherwise.
        self._unreadable: dict[str, str] = {}
        # Keys whose cached version was assumed (see `assume`) and not yet seen from the watch.
        self._assumed: set[str] = set()
        self.revision = 0
        self.relists = 0

    # -- configuration ----------------------------------------------------

    def add_handler(self, handler: Handler[M]) -> None:
        self._handlers.append(handler)

    def remove_handler(self, handler: Handler[M]) -> None:
        """Stop calling the handler (a borrower's, when its manager stops); absent, nothing."""
        if handler in self._handlers:
            self._handlers.remove(handler)

    def add_indexer(self, name: str, func: IndexFunc[M]) -> None:
        self._indexers[name] = func
        index = Index()
        for key, entry in self._cache.items():
            for value in func(self._unpacked(entry)):
                index.add(value, key)
        self._indices[name] = index

    # -- cache reads ------------------------------------------------------

    def get(self, key: str) -> M | None:
        """The cached object, None when the store holds none. A key whose stored value does not
        decode is not absent: its last good version, or `Undecodable` when none was seen, so
        that no caller takes it for gone."""
        entry = self._cache.get(key)
        if entry is not None:
            return self._unpacked(entry)
        etcd_key = self._unreadable.get(key)
        if etcd_key is not None:
            raise Undecodable(self.rt.kind, etcd_key, "no readable version of it was seen")
        return None

    def list(self) -> builtins.list[M]:
        return [self._unpacked(entry) for entry in self._cache.values()]

    def keys(self) -> builtins.list[str]:
        return builtins.list(self._cache)

    def unreadable(self) -> dict[str, str]:
        """Keys whose stored value does not decode now, each with its etcd key (`list` has the
        last good version of those it saw one of)."""
        return dict(self._unreadable)

    def unknown(self) -> builtins.list[str]:
        """Keys stored but missing from the cache: their value does not decode and no good one
        was seen. `list`, `keys` and the indices cannot show them."""
        return sorted(k for k in self._unreadable if k not in self._cache)

    def check_complete(self) -> None:
        """Raise `Undecodable` if some stored key is missing from the cache (see `unknown`): for a
        caller whose decision rests on what is not in `list` (an orphan, a missing cluster)."""
        unknown = self.unknown()
        if unknown:
            raise Undecodable(self.rt.kind, self._unreadable[unknown[0]], "no readable version of it was seen")

    def by_index(self, name: str, value: str) -> builtins.list[M]:
        return [self._unpacked(self._cache[k]) for k in sorted(self._indices[name].keys(value))]

    def index_keys(self, name: str, value: str) -> frozenset[str]:
        """The keys under `value` in an index, unordered, with nothing decoded: for a caller that
        needs only the keys (a compact informer decodes every object `by_index` returns)."""
        return self._indices[name].keys(value)

    def index_values(self, name: str) -> frozenset[str]:
        """The values an index holds keys under (e.g. the namespaces with objects), nothing decoded."""
        return self._indices[name].values()

    async def assume(self, written: M) -> None:
        """Take a version this process has just written, ahead of the watch (client-go's
        MutationCache does the same): the writer's own next step, which reads this cache, need
        not wait for etcd's watch to echo the write back. `written` is what the store returned
        (its resourceVersion the write's revision); a version older than the cached one is
        ignored, and when the watch delivers this revision it is not reported again. Handlers
        see it as any other change; for one key they never see a version go backwards, though
        they may not see a version that someone else wrote in between."""
        key = object_key_of(written)
        revision = int(meta_of(written).resource_version or 0)
        cached = self._cache.get(key)
        if not self.synced or (cached is not None and self._revision(cached) >= revision):
            return
        kind = EventType.MODIFIED if cached is not None else EventType.ADDED
        self._assumed.add(key)
        self._unreadable.pop(key, None)  # what is stored now is what was written
        await self._apply(kind, key, copy_of(written))

    def _ahead(self, key: str, cached: M | _Packed, listed: int) -> bool:
        """Whether the cache holds a version assumed after a list read at revision `listed`."""
        return key in self._assumed and self._revision(cached) > listed

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    # -- the loop ---------------------------------------------------------

    async def run(self) -> None:
        """List, then watch forever; cancel the task to stop.

        Run again after a cancel, it resumes from the last revision it saw.
        """
        delay = self._backoff[0]
        need_list = not self.synced
        while True:
            try:
                if need_list:
                    await self._relist()
                    need_list = False
                await self._watch()
            except Compacted as e:
                log.info("event=relist resource=%s reason=compacted revision=%s", self.rt.resource, e)
                need_list = True
                continue
            except StoreError as e:
                log.info("event=watch-retry resource=%s error=%s", self.rt.resource, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])
                continue
            delay = self._backoff[0]

    async def _relist(self) -> None:
        result = await self.store.list(self.rt, self.namespace)
        fresh = {object_key_of(o): o for o in result.items}
        if self.revision:
            self.relists += 1
        for key, obj in fresh.items():
            old = self._cache.get(key)
            if old is None:
                await self._apply(EventType.ADDED, key, obj)
            elif (listed := int(meta_of(obj).resource_version or 0)) != self._revision(old) \
                    and not self._ahead(key, old, listed):
                await self._apply(EventType.MODIFIED, key, obj)
        unreadable = {self._object_key(etcd_key): etcd_key for etcd_key in result.undecodable}
        for key, etcd_key in unreadable.items():
            if key not in self._unreadable:
                await self._report_undecodable(etcd_key, str(Undecodable(self.rt.kind, etcd_key)))
        self._unreadable = unreadable
        # A version assumed while the list was read is newer than the list, not gone; a key
        # whose value does not decode is still there, at its last good version.
        for key in [k for k, entry in self._cache.items()
                    if k not in fresh and k not in unreadable and not self._ahead(k, entry, result.revision)]:
            await self._apply(EventType.DELETED, key, None)
        self._assumed.clear()
        self.revision = result.revision
        self._synced.set()

    async def _watch(self) -> None:
        async with contextlib.aclosing(self.store.watch(self.prefix, self.revision + 1)) as events:
            async for event in events:
                await self._on_event(event)
                self.revision = event.revision

    async def _on_event(self, event: KeyEvent) -> None:
        key = self._object_key(event.key)
        if event.kind == WatchKind.DELETE:
            self._unreadable.pop(key, None)
            await self._apply(EventType.DELETED, key, None)
            return
        cached = self._cache.get(key)
        if key in self._assumed:
            # The echo of an assumed write (or a version older than it): reported when assumed,
            # and not decoded again.
            if cached is not None and self._revision(cached) >= event.revision:
                if self._revision(cached) == event.revision:
                    self._assumed.discard(key)
                self._unreadable.pop(key, None)  # what was written was a good value
                return
            self._assumed.discard(key)
        try:
            obj = decode_object(self.rt, event.value, event.revision, event.key)
        except Undecodable as e:
            # Not a deletion: the cache keeps the last good version and handlers hear nothing,
            # so no controller takes the object for gone (and deletes, moves or re-creates what
            # hangs on it). One that writes it fails its compare-and-swap and reads etcd, which
            # raises Undecodable: it waits until a good value (or a delete) comes. A Secret or
            # Work the store could not open (no key, another key, plaintext refused) comes the
            # same way, with the store's reason, which says what to do.
            self._unreadable[key] = event.key
            await self._report_undecodable(event.key, unopened_reason(event.value) or str(e))
            return
        self._unreadable.pop(key, None)
        kind = EventType.MODIFIED if cached is not None else EventType.ADDED
        await self._apply(kind, key, obj, _Packed(event.revision, event.value))

    async def _report_undecodable(self, etcd_key: str, error: str) -> None:
        log.warning("event=undecodable resource=%s key=%s error=%s", self.rt.resource, etcd_key, error)
        UNDECODABLE_OBJECTS.labels(resource=self.rt.resource).inc()
        if self._on_undecodable is None:
            return
        try:
            result = self._on_undecodable(etcd_key, error)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("event=undecodable-callback-error resource=%s key=%s", self.rt.resource, etcd_key)

    def _object_key(self, etcd_key: str) -> str:
        # Below the resource prefix the key is already "<ns>/<name>" or "<name>",
        # unless this informer watches a single namespace.
        rest = etcd_key[len(self.prefix):]
        if self.rt.namespaced and self.namespace:
            return f"{self.namespace}/{rest}"
        return rest

    def _unpacked(self, entry: M | _Packed) -> M:
        if isinstance(entry, _Packed):
            return decode_object(self.rt, entry.value, entry.revision)
        return entry

    @staticmethod
    def _revision(entry: M | _Packed) -> int:
        """The cached version's resourceVersion, the revision that wrote it."""
        return entry.revision if isinstance(entry, _Packed) else int(meta_of(entry).resource_version or 0)

    async def _apply(self, kind: EventType, key: str, obj: M | None, packed: _Packed | None = None) -> None:
        entry = self._cache.get(key)
        old = None if entry is None else self._unpacked(entry)
        if kind == EventType.DELETED:
            self._assumed.discard(key)
            if old is None:
                return
            self._cache.pop(key)
        else:
            assert obj is not None
            if self._compact:
                self._cache[key] = packed or _Packed(int(meta_of(obj).resource_version), obj.SerializeToString())
            else:
                self._cache[key] = obj
        for name, func in self._indexers.items():
            before = func(old) if old is not None else []
            after = func(obj) if obj is not None else []
            # Mostly a status written: the values stay, and the index is not touched.
            if before != after:
                self._indices[name].move(key, before, after)
        shown = obj if obj is not None else old
        assert shown is not None
        for handler in self._handlers:
            try:
                result = handler(kind, shown, old if kind != EventType.DELETED else None)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("event=handler-error resource=%s key=%s", self.rt.resource, key)
