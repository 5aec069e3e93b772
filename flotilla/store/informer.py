"""Informers: list at a revision, watch from the next, keep a local cache.

Handlers see every change exactly once and in revision order. A broken watch
(etcd restarted, connection lost) resumes from the last revision seen, so
nothing is missed or replayed; a compacted watch relists and reports the
difference between the cache and the new list.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

import aetcd.exceptions
import aetcd.rtypes

from flotilla.api import keys
from flotilla.store.errors import StoreError
from flotilla.store.objects import ResourceRef, Store, resource_type_of

log = logging.getLogger(__name__)


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


Handler = Callable[[EventType, Any, Any], Awaitable[None] | None]
IndexFunc = Callable[[Any], list[str]]


class Informer:
    def __init__(
        self,
        store: Store,
        ref: ResourceRef,
        namespace: str | None = None,
        retry_backoff: tuple[float, float] = (0.05, 2.0),
    ) -> None:
        self.store = store
        self.rt = resource_type_of(ref)
        self.namespace = namespace
        self.prefix = keys.etcd_prefix(self.rt.resource, namespace if self.rt.namespaced else None)
        self._cache: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._backoff = retry_backoff
        self.revision = 0
        self.relists = 0

    # -- configuration ----------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self._indexers[name] = func
        index: dict[str, set[str]] = {}
        for key, obj in self._cache.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        self._indices[name] = index

    # -- cache reads ------------------------------------------------------

    def get(self, key: str) -> Any | None:
        return self._cache.get(key)

    def list(self) -> list[Any]:
        return list(self._cache.values())

    def keys(self) -> list[str]:
        return list(self._cache)

    def by_index(self, name: str, value: str) -> list[Any]:
        return [self._cache[k] for k in sorted(self._indices[name].get(value, ()))]

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
            except aetcd.exceptions.RevisionCompactedError as e:
                log.info("event=relist resource=%s reason=compacted revision=%s", self.rt.resource, e)
                need_list = True
                continue
            except (aetcd.exceptions.ClientError, StoreError) as e:
                log.info("event=watch-retry resource=%s error=%s", self.rt.resource, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])
                continue
            delay = self._backoff[0]

    async def _relist(self) -> None:
        result = await self.store.list(self.rt, self.namespace)
        fresh = {keys.object_key(o.metadata.namespace, o.metadata.name): o for o in result.items}
        if self.revision:
            self.relists += 1
        for key, obj in fresh.items():
            old = self._cache.get(key)
            if old is None:
                await self._apply(EventType.ADDED, key, obj)
            elif old.metadata.resource_version != obj.metadata.resource_version:
                await self._apply(EventType.MODIFIED, key, obj)
        for key in [k for k in self._cache if k not in fresh]:
            await self._apply(EventType.DELETED, key, None)
        self.revision = result.revision
        self._synced.set()

    async def _watch(self) -> None:
        client = self.store.client
        watch = await client.watch_prefix(self.prefix.encode(), start_revision=self.revision + 1)
        try:
            async for event in watch:
                kv = event.kv
                key = self._object_key(kv.key.decode())
                if event.kind == aetcd.rtypes.EventKind.DELETE:
                    await self._apply(EventType.DELETED, key, None)
                else:
                    obj = self.store.decode(self.rt, kv.value, kv.mod_revision)
                    kind = EventType.MODIFIED if key in self._cache else EventType.ADDED
                    await self._apply(kind, key, obj)
                self.revision = kv.mod_revision
        finally:
            await asyncio.shield(_cancel_quietly(watch))

    def _object_key(self, etcd_key: str) -> str:
        # Below the resource prefix the key is already "<ns>/<name>" or "<name>",
        # unless this informer watches a single namespace.
        rest = etcd_key[len(self.prefix):]
        if self.rt.namespaced and self.namespace:
            return f"{self.namespace}/{rest}"
        return rest

    async def _apply(self, kind: EventType, key: str, obj: Any) -> None:
        old = self._cache.get(key)
        if kind == EventType.DELETED:
            if old is None:
                return
            self._cache.pop(key)
        else:
            self._cache[key] = obj
        for name, func in self._indexers.items():
            index = self._indices[name]
            if old is not None:
                for value in func(old):
                    members = index.get(value)
                    if members is not None:
                        members.discard(key)
                        if not members:
                            del index[value]
            if obj is not None:
                for value in func(obj):
                    index.setdefault(value, set()).add(key)
        shown = obj if obj is not None else old
        for handler in self._handlers:
            try:
                result = handler(kind, shown, old if kind != EventType.DELETED else None)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("event=handler-error resource=%s key=%s", self.rt.resource, key)


async def _cancel_quietly(watch: Any) -> None:
    # aetcd queues the cancel request on the watch stream; with the stream gone (etcd down,
    # a closed loop) that can wait forever, so it gets a bound.
    try:
        await asyncio.wait_for(watch.cancel(), timeout=2)
    except Exception:  # the stream may already be gone with the connection
        log.debug("watch cancel failed", exc_info=True)
