"""Typed object store on etcd.

One key per object, `/flotilla/<resource>/<namespace>/<name>`, holding the
serialized message (a Secret's encrypted when the store has keys: flotilla.security.crypto).
`metadata.resourceVersion` is the key's mod_revision, and
every write is a transaction comparing it, so a lost update is impossible.
Deletion honours finalizers the way the Kubernetes API server does; those
semantics are shared with the in-memory store (flotilla.store.base).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import AsyncGenerator, Awaitable
from typing import Any, TypeVar

import aetcd
import aetcd.exceptions
import aetcd.rtypes
from aetcd.transactions import Create, Delete, Get, Mod, Put, Txn

from flotilla.aio.clock import Clock, RealClock
from flotilla.api.keys import etcd_prefix
from flotilla.security.crypto import ENV_KEY_FILE, PREFIX, EncryptionError, EncryptionKeys, configured_keys
from flotilla.security.tls import TLSFiles
from flotilla.store.base import (
    KeyEvent,
    KeyValue,
    ListResult,
    ResourceRef,
    StoreBase,
    WatchKind,
    matches_labels,
    object_key_of,
    resource_type_for_object,
    resource_type_of,
)
from flotilla.store.connect import make_client
from flotilla.store.connect import watch as checked_watch
from flotilla.store.errors import Compacted, StoreError, Unavailable
from flotilla.store.group_commit import GroupCommit

__all__ = [
    "ListResult",
    "ResourceRef",
    "Store",
    "matches_labels",
    "object_key_of",
    "resource_type_for_object",
    "resource_type_of",
]

log = logging.getLogger(__name__)

SECRETS_PREFIX = etcd_prefix("secrets")

T = TypeVar("T")


class Store(StoreBase):
    """get / list / create / update / update_status / delete / mutate on etcd."""

    def __init__(
        self,
        client: aetcd.Client,
        clock: Clock | None = None,
        endpoints: str = "",
        keys: EncryptionKeys | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.endpoints = endpoints
        self.keys = keys
        self._group: GroupCommit[Txn, Any] | None = None

    @classmethod
    async def connect(cls, endpoints: str, clock: Clock | None = None, tls: TLSFiles | None = None,
                      keys: EncryptionKeys | None = None) -> Store:
        """`tls` and `keys` default to what flotilla.security.tls and flotilla.security.crypto find configured."""
        client = make_client(endpoints, tls=tls)
        store = cls(client, clock, endpoints, keys or configured_keys())
        await store._call(client.connect())
        return store

    # -- encryption at rest of Secrets ---------------------------------------

    def _sealed(self, key: str, value: bytes) -> bytes:
        if self.keys is None or not key.startswith(SECRETS_PREFIX):
            return value
        return self.keys.encrypt(value, key.encode())

    def _opened(self, key: str, value: bytes) -> bytes:
        if not key.startswith(SECRETS_PREFIX) or not value.startswith(PREFIX):
            return value
        if self.keys is None:
            raise StoreError(f"{key} is encrypted and this process has no encryption key file "
                             f"(--encryption-key-file or {ENV_KEY_FILE})")
        try:
            return self.keys.decrypt(value, key.encode())
        except EncryptionError as e:
            raise StoreError(str(e)) from e

    async def close(self) -> None:
        await self.client.close()

    def _where(self) -> str:
        return f"etcd at {self.endpoints or 'its endpoint'}"

    async def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except (aetcd.exceptions.ConnectionFailedError, aetcd.exceptions.ConnectionTimeoutError) as e:
            raise Unavailable(f"{self._where()} is unreachable: {e}") from e
        except aetcd.exceptions.ClientError as e:
            # Callers handle StoreError; aetcd's own hierarchy stays an implementation detail.
            raise StoreError(f"{self._where()}: {e}") from e

    async def rewrite_secrets(self) -> tuple[int, int]:
        """Re-encrypt with the current key every Secret stored otherwise (plaintext, or an older
        key), each a compare-and-swap on its mod_revision; (rewritten, total). A Secret written
        meanwhile by someone else is left to that write, which used the current key if the
        writer has the new key file."""
        if self.keys is None:
            raise StoreError(f"no encryption key file (--encryption-key-file or {ENV_KEY_FILE}): nothing to "
                             "encrypt with")
        result: Any = await self._call(self.client.get_prefix(SECRETS_PREFIX.encode()))
        rewritten = total = 0
        for kv in result:
            total += 1
            key, raw = kv.key.decode(), bytes(kv.value)
            if self.keys.is_current(raw):
                continue
            if await self.kv_put_if(key, self._opened(key, raw), int(kv.mod_revision), int(kv.lease) or None):
                rewritten += 1
        return rewritten, total

    # -- key-value primitives ----------------------------------------------

    async def kv_get(self, key: str) -> KeyValue | None:
        k = key.encode()
        got = await self._batched(k, Txn([], [Get(k)], []))
        kvs = got.responses[0].response_range.kvs
        if not kvs:
            return None
        return KeyValue(key, self._opened(key, bytes(kvs[0].value)), int(kvs[0].mod_revision))

    async def kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        result: Any = await self._call(self.client.get_prefix(prefix.encode()))
        kvs = [KeyValue(k, self._opened(k, bytes(kv.value)), int(kv.mod_revision))
               for kv in result for k in (kv.key.decode(),)]
        return kvs, int(result.header.revision)

    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        k = key.encode()
        sealed = self._sealed(key, value)
        # What is in the way comes back with the refusal: a caller that then updates it needs no read.
        done = await self._batched(k, Txn([Create(k) == 0], [Put(k, sealed, lease=lease)], [Get(k)]), len(sealed))
        if done.succeeded:
            return int(done.responses[0].response_put.header.revision)
        kvs = done.responses[0].response_range.kvs
        return KeyValue(key, self._opened(key, bytes(kvs[0].value)), int(kvs[0].mod_revision)) if kvs else None

    async def kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        k = key.encode()
        sealed = self._sealed(key, value)
        done = await self._batched(k, Txn([Mod(k) == mod_revision], [Put(k, sealed, lease=lease)], []), len(sealed))
        return int(done.responses[0].response_put.header.revision) if done.succeeded else None

    async def kv_delete_if(self, key: str, mod_revision: int) -> bool:
        k = key.encode()
        done = await self._batched(k, Txn([Mod(k) == mod_revision], [Delete(k)], []))
        return bool(done.succeeded)

    async def _batched(self, key: bytes, txn: Txn, size: int = 0) -> Any:
        """The answer (etcd's TxnResponse) to one nested transaction, sent with whatever else
        this process has under way (flotilla.store.group_commit)."""
        if self._group is None:
            self._group = GroupCommit(self._commit, fatal=(Unavailable,))
        return await self._group.submit(key, txn, size)

    async def _commit(self, txns: builtins.list[Txn]) -> builtins.list[Any]:
        _, responses = await self._call(self.client.transaction(compare=[], success=txns, failure=[]))
        return [r.response_txn for r in responses]

    async def grant_lease(self, ttl: int) -> int:
        lease: Any = await self._call(self.client.lease(ttl))
        return int(lease.id)

    async def refresh_lease(self, lease: int) -> int:
        reply: Any = await self._call(self.client.refresh_lease(lease))
        return max(int(reply.TTL), 0) if reply is not None else 0

    async def revoke_lease(self, lease: int) -> None:
        await self._call(self.client.revoke_lease(lease))

    async def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[KeyEvent, None]:
        try:
            watch: Any = await checked_watch(self.client, prefix.encode(), prefix=True, start_revision=start_revision)
        except aetcd.exceptions.RevisionCompactedError as e:
            raise Compacted(int(e.compacted_revision)) from e
        except aetcd.exceptions.ClientError as e:
            raise Unavailable(f"{self._where()}: watch failed: {e}") from e
        try:
            try:
                async for event in watch:
                    kv = event.kv
                    kind = WatchKind.DELETE if event.kind == aetcd.rtypes.EventKind.DELETE else WatchKind.PUT
                    key = kv.key.decode()
                    value = self._opened(key, bytes(kv.value)) if kind == WatchKind.PUT else bytes(kv.value)
                    yield KeyEvent(kind, key, value, int(kv.mod_revision))
            except aetcd.exceptions.RevisionCompactedError as e:
                raise Compacted(int(e.compacted_revision)) from e
            except aetcd.exceptions.ClientError as e:
                raise Unavailable(f"{self._where()}: watch broke: {e}") from e
        finally:
            await asyncio.shield(_cancel_quietly(watch))


async def _cancel_quietly(watch: Any) -> None:
    # aetcd queues the cancel request on the watch stream; with the stream gone (etcd down,
    # a closed loop) that can wait forever, so it gets a bound.
    try:
        await asyncio.wait_for(watch.cancel(), timeout=2)
    except Exception:  # the stream may already be gone with the connection
        log.debug("watch cancel failed", exc_info=True)
