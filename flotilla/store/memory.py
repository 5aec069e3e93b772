"""An object store in one process's memory, with etcd's revision model.

For tests and simulations that want the store's semantics (CAS, finalizers,
generation, watches that resume and compact) without an etcd. Keys, revisions
and lease behaviour follow etcd: one revision counter for the whole store,
every write gets the next one, a put without a lease detaches the key from the
lease it had, and revoking a lease deletes its keys in one revision.
Lease expiry is explicit (`expire_leases`, against the store's clock), since
nothing here keeps leases alive.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from flotilla.aio.clock import Clock, RealClock
from flotilla.store.base import KeyEvent, KeyValue, StoreBase, WatchKind
from flotilla.store.errors import Compacted, StoreError, Unavailable


@dataclass
class _Entry:
    value: bytes
    mod_revision: int
    lease: int | None


@dataclass
class _Lease:
    ttl: int
    deadline: float
    keys: set[str] = field(default_factory=set)


class MemoryStore(StoreBase):
    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or RealClock()
        self.revision = 1
        self.compacted_revision = 0
        self._data: dict[str, _Entry] = {}
        self._history: builtins.list[KeyEvent] = []
        self._leases: dict[int, _Lease] = {}
        self._next_lease = 0x1000
        # Replaced on every write; a watcher waits on the one it saw before looking.
        self._written = asyncio.Event()
        # Bumped by break_watches, so that each open watch fails once.
        self._epoch = 0

    async def close(self) -> None:
        self.break_watches()

    # -- writes at one revision --------------------------------------------

    def _commit(self, changes: builtins.list[tuple[str, bytes | None, int | None]]) -> int:
        self.revision += 1
        for key, value, lease in changes:
            old = self._data.get(key)
            if old is not None and old.lease is not None and old.lease in self._leases:
                self._leases[old.lease].keys.discard(key)
            if value is None:
                self._data.pop(key, None)
                self._history.append(KeyEvent(WatchKind.DELETE, key, b"", self.revision))
            else:
                self._data[key] = _Entry(value, self.revision, lease)
                if lease is not None:
                    self._leases[lease].keys.add(key)
                self._history.append(KeyEvent(WatchKind.PUT, key, value, self.revision))
        self._wake()
        return self.revision

    def _wake(self) -> None:
        self._written.set()
        self._written = asyncio.Event()

    def _check_lease(self, lease: int | None) -> None:
        if lease is not None and lease not in self._leases:
            raise StoreError(f"lease {lease:x} not found")

    # -- key-value primitives ----------------------------------------------
    # Each gives other tasks a turn first, as a round trip to etcd does: without it a
    # controller's workers drain a whole queue in one turn of the loop, and a test cannot
    # act in the middle of a storm as it would against etcd.

    async def kv_get(self, key: str) -> KeyValue | None:
        await asyncio.sleep(0)
        self.expire_leases()
        entry = self._data.get(key)
        return None if entry is None else KeyValue(key, entry.value, entry.mod_revision)

    async def kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        await asyncio.sleep(0)
        self.expire_leases()
        found = [KeyValue(k, e.value, e.mod_revision) for k, e in sorted(self._data.items()) if k.startswith(prefix)]
        return found, self.revision

    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        await asyncio.sleep(0)
        self.expire_leases()
        if (entry := self._data.get(key)) is not None:
            return KeyValue(key, entry.value, entry.mod_revision)
        self._check_lease(lease)
        return self._commit([(key, value, lease)])

    async def kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        await asyncio.sleep(0)
        self.expire_leases()
        entry = self._data.get(key)
        if entry is None or entry.mod_revision != mod_revision:
            return None
        self._check_lease(lease)
        return self._commit([(key, value, lease)])

    async def kv_delete_if(self, key: str, mod_revision: int) -> bool:
        await asyncio.sleep(0)
        self.expire_leases()
        entry = self._data.get(key)
        if entry is None or entry.mod_revision != mod_revision:
            return False
        self._commit([(key, None, None)])
        return True

    def put_raw(self, key: str, value: bytes, lease: int | None = None) -> int:
        """Write bytes under a key unchecked, as another tool writing to etcd would."""
        self._check_lease(lease)
        return self._commit([(key, value, lease)])

    # -- leases ------------------------------------------------------------

    async def grant_lease(self, ttl: int) -> int:
        self._next_lease += 1
        self._leases[self._next_lease] = _Lease(ttl, self.clock.monotonic() + ttl)
        return self._next_lease

    async def refresh_lease(self, lease: int) -> int:
        self.expire_leases()
        found = self._leases.get(lease)
        if found is None:
            return 0
        found.deadline = self.clock.monotonic() + found.ttl
        return found.ttl

    async def revoke_lease(self, lease: int) -> None:
        self._revoke(lease)

    def _revoke(self, lease: int) -> None:
        found = self._leases.pop(lease, None)
        if found is not None and found.keys:
            self._commit([(key, None, None) for key in sorted(found.keys)])

    def expire_leases(self) -> builtins.list[int]:
        """End every lease whose TTL has run out by the store's clock; the ids ended."""
        now = self.clock.monotonic()
        expired = [lease for lease, found in self._leases.items() if found.deadline <= now]
        for lease in expired:
            self._revoke(lease)
        return expired

    # -- history -----------------------------------------------------------

    def compact(self, revision: int) -> None:
        """Forget history below revision, as etcd's compaction does."""
        revision = min(revision, self.revision)
        self._history = [e for e in self._history if e.revision >= revision]
        self.compacted_revision = max(self.compacted_revision, revision)
        self._wake()

    def break_watches(self) -> None:
        """Fail every open watch, as a lost connection to etcd would."""
        self._epoch += 1
        self._wake()

    async def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[KeyEvent, None]:
        epoch = self._epoch
        wanted = max(start_revision, 1)
        while True:
            written = self._written
            if self._epoch != epoch:
                raise Unavailable("memory store: watch broken")
            if wanted < self.compacted_revision:
                raise Compacted(self.compacted_revision)
            at = self.revision
            for event in [e for e in self._history if e.revision >= wanted]:
                wanted = event.revision + 1
                if event.key.startswith(prefix):
                    yield event
                    if self._epoch != epoch:
                        raise Unavailable("memory store: watch broken")
            # Caught up to `at`: compaction up to there leaves this watch nothing to miss.
            wanted = max(wanted, at + 1)
            await written.wait()
