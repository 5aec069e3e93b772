"""Typed object store on etcd.

One key per object, `/flotilla/<resource>/<namespace>/<name>`, holding the
serialized message (Secrets and Works encrypted, failing closed: flotilla.security.crypto, and
`Store._sealed`/`Store._opened` below).
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
import aetcd.rpc
import aetcd.rtypes
import aetcd.utils
import grpc
from aetcd.transactions import Create, Delete, Get, Mod, Put, Txn
from prometheus_client import Counter

from flotilla.aio.clock import Clock, RealClock
from flotilla.api.keys import etcd_prefix
from flotilla.security.crypto import (
    ACCEPT_PLAINTEXT_FLAG,
    ALLOW_PLAINTEXT_FLAG,
    ENV_ACCEPT_PLAINTEXT,
    ENV_ALLOW_PLAINTEXT,
    ENV_KEY_FILE,
    KEY_FILE_FLAG,
    EncryptionError,
    EncryptionKeys,
    configured_keys,
    env_flag,
    is_encrypted,
)
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
from flotilla.store.connect import WATCH_BACKLOG, WatchBehind, make_client
from flotilla.store.connect import watch as checked_watch
from flotilla.store.errors import Compacted, StoreError, Unavailable, Undecodable
from flotilla.store.group_commit import GroupCommit

__all__ = [
    "ListResult",
    "ResourceRef",
    "Store",
    "Unopenable",
    "matches_labels",
    "object_key_of",
    "resource_type_for_object",
    "resource_type_of",
]

log = logging.getLogger(__name__)

WATCHES_RESUMED = Counter(
    "flotilla_store_watches_resumed",
    "Watches cut because their reader fell a backlog behind, and carried on from the cut on a new one",
    ["prefix"],
)

# Keys per Range request of a list (kv_range).
RANGE_PAGE = 1000


class _PageTooLarge(Exception):
    """A Range answer larger than a gRPC message: asked for again in a smaller page."""

SECRETS_PREFIX = etcd_prefix("secrets")
# Works carry the Secrets they propagate (as manifests), so they are sealed like Secrets, and every
# Work, not only those with a Secret in them: which those are is known only once a value is decoded,
# the rules stay one prefix each, and the cost is lost in etcd's. Measured (2 cores): AES-GCM of a
# 4 KB Work takes about 2 us each way (10 us at 64 KB) and adds 53 bytes; 1,500 Works of 2.7 KB
# created, updated and listed through etcd took the same time sealed as plain, within run-to-run noise
# (creates 130-180 ms, updates 200-215 ms, the list 35 ms, either way).
WORKS_PREFIX = etcd_prefix("works")
SEALED_KINDS = {SECRETS_PREFIX: "Secret", WORKS_PREFIX: "Work"}

# What a list or a watch hands on in place of a value this process may not open: these bytes, then
# why. No protobuf parser accepts a field number 0, so the value decodes as no object wherever it
# goes: a list names its key as undecodable, an informer keeps it unreadable (not deleted), the
# plane's API passes it on as it is. `unopened_reason` reads the why back.
UNOPENED = b"\x00flotilla:unopened:"
_WARNED_KEYS = 10_000


def sealed_kind(key: str) -> str | None:
    """The kind whose values are encrypted at rest under this etcd key, None for the rest."""
    for prefix, kind in SEALED_KINDS.items():
        if key.startswith(prefix):
            return kind
    return None


def unopened_reason(value: bytes) -> str | None:
    """Why a value handed on by a list or a watch could not be opened; None for any other value."""
    return value[len(UNOPENED):].decode(errors="replace") if value.startswith(UNOPENED) else None


class Unopenable(Undecodable):
    """A Secret or a Work this process may not, or cannot, open: plaintext where only encrypted
    values are read, encrypted with a key its key file lacks, or encrypted while it has no key file.

    An Undecodable, so that every reader takes it as one: the object is there, unknown to this
    process, never gone (an informer keeps its last good version, a list names it, a delete does
    not take it for corrupt). Unlike a corrupt value, the message says what to do."""

    def __init__(self, kind: str, key: str, reason: str) -> None:
        super().__init__(kind, key, reason)
        self.args = (f"{kind} at {key} cannot be opened: {reason}",)


T = TypeVar("T")


class Store(StoreBase):
    """get / list / create / update / update_status / delete / mutate on etcd."""

    def __init__(
        self,
        client: aetcd.Client,
        clock: Clock | None = None,
        endpoints: str = "",
        keys: EncryptionKeys | None = None,
        *,
        allow_plaintext: bool | None = None,
        accept_plaintext: bool | None = None,
        watch_backlog: int = WATCH_BACKLOG,
    ) -> None:
        """`allow_plaintext`: with no `keys`, write Secrets and Works unencrypted (a plane run without
        encryption on purpose) instead of refusing; `accept_plaintext`: read plaintext ones as they
        are (the migration window). None takes each from its FLOTILLA_* variable, so every process
        (the CLI, the plane, benchmarks) honours what a service takes from its flags.
        `watch_backlog`: the events a watch holds for its reader (flotilla.store.connect.BoundedWatch)."""
        self.client = client
        self.watch_backlog = watch_backlog
        self.clock = clock or RealClock()
        self.endpoints = endpoints
        self.keys = keys
        self.allow_plaintext = env_flag(ENV_ALLOW_PLAINTEXT) if allow_plaintext is None else allow_plaintext
        self.accept_plaintext = env_flag(ENV_ACCEPT_PLAINTEXT) if accept_plaintext is None else accept_plaintext
        self._group: GroupCommit[Txn, Any] | None = None
        # Logged once: the first plaintext write, and each value that could not be opened (by key
        # and revision), so that relists and watches do not repeat it.
        self._warned_plaintext = False
        self._warned: set[tuple[str, int]] = set()

    @classmethod
    async def connect(cls, endpoints: str, clock: Clock | None = None, tls: TLSFiles | None = None,
                      keys: EncryptionKeys | None = None, *, allow_plaintext: bool | None = None,
                      accept_plaintext: bool | None = None) -> Store:
        """`tls` and `keys` default to what flotilla.security.tls and flotilla.security.crypto find configured."""
        client = make_client(endpoints, tls=tls)
        store = cls(client, clock, endpoints, keys or configured_keys(),
                    allow_plaintext=allow_plaintext, accept_plaintext=accept_plaintext)
        await store._call(client.connect())
        return store

    # -- encryption at rest of Secrets and Works -----------------------------

    @property
    def reads_plaintext(self) -> bool:
        """Whether plaintext Secrets and Works are read as they are: in the migration window, or in
        a plane without encryption on purpose (which must read back what it writes)."""
        return self.accept_plaintext or (self.keys is None and self.allow_plaintext)

    def _sealed(self, key: str, value: bytes) -> bytes:
        """The bytes to store: encrypted for a Secret or a Work; a refusal, never plaintext, when
        this process has no key, unless plaintext was allowed on purpose."""
        kind = sealed_kind(key)
        if kind is None:
            return value
        if self.keys is not None:
            return self.keys.encrypt(value, key.encode())
        if not self.allow_plaintext:
            raise StoreError(
                f"{kind} at {key} not written: {kind}s are stored encrypted and this process has no encryption "
                f"key file ({KEY_FILE_FLAG} or {ENV_KEY_FILE}); a plane run without encryption on purpose "
                f"gives every process {ALLOW_PLAINTEXT_FLAG} ({ENV_ALLOW_PLAINTEXT}=true)")
        if not self._warned_plaintext:
            self._warned_plaintext = True
            log.warning("event=plaintext-at-rest kind=%s key=%s flag=%s: Secrets and Works are written to etcd "
                        "unencrypted", kind, key, ALLOW_PLAINTEXT_FLAG)
        return value

    def _opened(self, key: str, value: bytes, *, plaintext: bool = False) -> bytes:
        """The object's bytes as stored before `_sealed`; Unopenable when this process may not or
        cannot open them. `plaintext`: read a plaintext value whatever the flags (the rewrite
        that encrypts it)."""
        kind = sealed_kind(key)
        if kind is None:
            return value
        if not is_encrypted(value):
            if plaintext or self.reads_plaintext:
                return value
            no_key = "" if self.keys is not None else (
                f" (and this process has no encryption key file: {KEY_FILE_FLAG} or {ENV_KEY_FILE})")
            raise Unopenable(kind, key, (
                f"it is stored in plaintext, and only encrypted {kind}s are read, so that one put in etcd "
                f"unencrypted is not taken for the plane's own{no_key}. Encrypt what is stored with "
                f"`flotillactl secrets rewrite`; until then a process reads plaintext with "
                f"{ACCEPT_PLAINTEXT_FLAG} ({ENV_ACCEPT_PLAINTEXT}=true)"))
        if self.keys is None:
            raise Unopenable(kind, key, (
                f"it is encrypted and this process has no encryption key file ({KEY_FILE_FLAG} or {ENV_KEY_FILE})"))
        try:
            return self.keys.decrypt(value, key.encode())
        except EncryptionError as e:
            raise Unopenable(kind, key, str(e)) from e

    def _opened_or_marked(self, key: str, value: bytes, revision: int) -> bytes:
        """`_opened` for a list, a watch or a refused create, where one value must not fail the
        rest: a value that cannot be opened comes as UNOPENED and why (logged once per revision)."""
        try:
            return self._opened(key, value)
        except Unopenable as e:
            if (key, revision) not in self._warned:
                if len(self._warned) >= _WARNED_KEYS:
                    self._warned.clear()  # a bound, not a guarantee: at worst a line is repeated
                self._warned.add((key, revision))
                log.warning("event=unopenable key=%s revision=%d error=%s", key, revision, e)
            return UNOPENED + str(e).encode()

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
        """Re-encrypt with the current key every Secret and every Work stored otherwise (plaintext,
        or an older key), each a compare-and-swap on its mod_revision; (rewritten, total). Plaintext
        is read here whatever the flags: encrypting it is the point. A value written meanwhile by
        someone else is left to that write, which used the current key if the writer has the new
        key file. One sealed with a key the file lacks stops the rewrite (Unopenable names it)."""
        if self.keys is None:
            raise StoreError(f"no encryption key file ({KEY_FILE_FLAG} or {ENV_KEY_FILE}): nothing to encrypt with")
        rewritten = total = 0
        for prefix in SEALED_KINDS:
            async for _, page in self._pages(prefix):
                for kv in page:
                    total += 1
                    key, raw = kv.key.decode(), bytes(kv.value)
                    if self.keys.is_current(raw):
                        continue
                    opened = self._opened(key, raw, plaintext=True)
                    if await self.kv_put_if(key, opened, int(kv.mod_revision), int(kv.lease) or None):
                        rewritten += 1
        return rewritten, total

    # -- key-value primitives ----------------------------------------------

    async def kv_get(self, key: str) -> KeyValue | None:
        k = key.encode()
        got = await self._batched(k, Txn([], [Get(k)], []))
        kvs = got.responses[0].response_range.kvs
        if not kvs:
            return None
        # Raised, not marked: a get of one object says why it cannot be read.
        return KeyValue(key, self._opened(key, bytes(kvs[0].value)), int(kvs[0].mod_revision))

    async def kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        kvs: builtins.list[KeyValue] = []
        revision = 0
        async for at, page in self._pages(prefix):
            revision = at
            for kv in page:
                key = kv.key.decode()
                kvs.append(KeyValue(key, self._opened_or_marked(key, bytes(kv.value), int(kv.mod_revision)),
                                    int(kv.mod_revision)))
        return kvs, revision

    async def _pages(self, prefix: str) -> AsyncGenerator[tuple[int, Any], None]:
        """Every key under the prefix as etcd's KeyValues, in pages of at most RANGE_PAGE keys,
        all read at the first page's revision (one consistent snapshot, as Kubernetes reads its
        paginated lists): one answer with tens of thousands of objects passes gRPC's message
        limit. A page still too large (big objects) is asked for again at half the size."""
        start = prefix.encode()
        end = aetcd.utils.prefix_range_end(start)
        revision, limit = 0, RANGE_PAGE
        while True:
            try:
                page: Any = await self._call(self._range_page(start, end, limit, revision))
            except _PageTooLarge as e:
                if limit == 1:
                    raise StoreError(f"{self._where()}: one value under {prefix} is larger than a gRPC message") from e
                limit = max(limit // 2, 1)
                continue
            revision = revision or int(page.header.revision)
            yield revision, page.kvs
            if not page.more:
                return
            if not page.kvs:
                # "More" with nothing in this page: a list cut short here would read as deletions.
                raise StoreError(f"{self._where()}: a page under {prefix} said more and held nothing")
            start = bytes(page.kvs[-1].key) + b"\x00"

    async def _range_page(self, start: bytes, end: bytes, limit: int, revision: int) -> Any:
        """One Range request with a limit and a revision, which aetcd's get_prefix does not take."""
        await self.client.connect()
        request = aetcd.rpc.RangeRequest(key=start, range_end=end, limit=limit, revision=revision)
        try:
            return await self.client.kvstub.Range(request, timeout=self.client._timeout,
                                                  metadata=self.client.metadata)
        except aetcd.rpc.AioRpcError as e:
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise _PageTooLarge(e.details()) from e
            aetcd.exceptions._handle_exception(e)  # aetcd's own error for the code, as its calls raise
            raise

    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        k = key.encode()
        sealed = self._sealed(key, value)
        # What is in the way comes back with the refusal: a caller that then updates it needs no read.
        done = await self._batched(k, Txn([Create(k) == 0], [Put(k, sealed, lease=lease)], [Get(k)]), len(sealed))
        if done.succeeded:
            return int(done.responses[0].response_put.header.revision)
        kvs = done.responses[0].response_range.kvs
        if not kvs:
            return None
        revision = int(kvs[0].mod_revision)
        return KeyValue(key, self._opened_or_marked(key, bytes(kvs[0].value), revision), revision)

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
        # A reader that falls a backlog behind (flotilla.store.connect.BoundedWatch) carries on
        # from where its watch was cut, on a new one: it sees every event once, in order.
        start = start_revision
        while True:
            try:
                watch: Any = await checked_watch(self.client, prefix.encode(), prefix=True, backlog=self.watch_backlog,
                                                 start_revision=start)
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
                        value = (self._opened_or_marked(key, bytes(kv.value), int(kv.mod_revision))
                                 if kind == WatchKind.PUT else bytes(kv.value))
                        yield KeyEvent(kind, key, value, int(kv.mod_revision))
                    return
                except WatchBehind as e:
                    WATCHES_RESUMED.labels(prefix=prefix).inc()
                    log.debug("event=watch-resumed prefix=%s revision=%d", prefix, e.resume)
                    start = e.resume
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
