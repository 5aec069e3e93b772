"""The plane's storage API (protos/flotilla/v1/storage.proto): the store's key-value primitives
for callers that hold no etcd credentials, each call authorized on what its key holds
(flotilla.security.storage_access) by the same authorizer and audit log as admission.

- A read is `get`, a list `list`, a watch `watch`; writes are `create`, `update` and `delete`.
  An update that changes nothing but the status is authorized as the `status` subresource, as
  Kubernetes authorizes a write to `.../status`. An object's content is never written here, only
  its status and bookkeeping (flotilla.security.storage_access.write_refusal): what admission
  validates, and its guard against granting more than one holds, cannot be gone around.
- A value written under an object's key must decode as an object of its kind named for the key:
  nothing undecodable enters the store through here.
- Leases: whoever is allowed `create` on `leases.flotilla.io` gets leases of its own. Who holds
  each is kept under `/flotilla/leaseowners/<id>`, on the lease itself, so only the holder can
  renew or end it or write keys on it (no one can revoke another's lease and take its keys).
- A list is streamed in pieces, so that no reply outgrows gRPC's message limit.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf.message import Message

from flotilla.api import jsonbytes
from flotilla.api.registry import LEASE_OWNERS_SEGMENT
from flotilla.api.v1 import meta_pb2, storage_pb2, storage_pb2_grpc
from flotilla.security.rbac import User
from flotilla.security.storage_access import LEASE_GRANT, NotServed, Target, status_only, target_of, write_refusal
from flotilla.store import Compacted, StoreError, Unavailable, Undecodable
from flotilla.store.base import KeyValue, StoreBase, WatchKind, decode_object
from flotilla.store.remote import COMPACTED
from services.rpc import abort
from services.webhook.callers import Gate

log = logging.getLogger(__name__)
STORAGE_SERVICE = storage_pb2.DESCRIPTOR.services_by_name["Storage"].full_name
LEASE_OWNERS = f"/flotilla/{LEASE_OWNERS_SEGMENT}/"
# A piece of a list: well under gRPC's 4 MiB default message limit.
RANGE_PIECE_BYTES = 1 << 20
MAX_LEASE_TTL = 3600


def _kv(kv: KeyValue) -> storage_pb2.KeyValue:
    return storage_pb2.KeyValue(key=kv.key, value=kv.value, mod_revision=kv.mod_revision)


def decoded(target: Target, key: str, value: bytes) -> Message | None:
    """The object a value under an object key holds (None for the registries' values, which are
    not objects); Undecodable when it is not one of the key's kind named for the key."""
    if not target.is_object:
        return None
    obj: Any
    if target.builtin is not None:
        obj = decode_object(target.builtin, value, 0, key)
    else:
        obj = meta_pb2.Unstructured()
        try:
            obj.ParseFromString(value)
            jsonbytes.loads(obj.content or b"{}")
        except Exception as e:  # DecodeError, a JSON error: the value is not a template
            raise Undecodable(target.resource, key, f"{type(e).__name__}: {e}") from e
        if obj.metadata.name != target.name:
            raise Undecodable(target.resource, key, f"it names {obj.metadata.name!r}")
    if obj.metadata.namespace != target.namespace:
        raise Undecodable(target.resource, key, f"it is in namespace {obj.metadata.namespace!r}")
    found: Message = obj
    return found


class StorageServicer(storage_pb2_grpc.StorageServicer):
    def __init__(self, store: StoreBase, gate: Gate) -> None:
        self.store = store
        self.gate = gate

    # -- what every call does first ------------------------------------------------

    async def _target(self, key: str, context: grpc.aio.ServicerContext, *, collection: bool) -> Target:
        try:
            target = target_of(key)
        except NotServed as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        if target.collection != collection:
            wanted = "a prefix ending in \"/\"" if collection else "one key, not a prefix"
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, f'"{key}": expected {wanted}')
        return target

    async def _allowed(self, method: str, verb: str, key: str, context: grpc.aio.ServicerContext, *,
                       collection: bool = False) -> tuple[User, Target]:
        """Who calls and what the key holds, once the caller may `verb` it."""
        user = await self.gate.caller(context)
        target = await self._target(key, context, collection=collection)
        await self.gate.check(method, user, target.request(verb), context)
        return user, target

    async def _decoded(self, target: Target, key: str, value: bytes, context: grpc.aio.ServicerContext
                       ) -> Message | None:
        try:
            return decoded(target, key, value)
        except Undecodable as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))

    async def _writable(self, target: Target, verb: str, old: Message | None, new: Message | None,
                        context: grpc.aio.ServicerContext) -> None:
        if refusal := write_refusal(target, verb, old, new):
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, refusal)

    async def _own_lease(self, user: User, lease: int, context: grpc.aio.ServicerContext) -> bool:
        """Whether the lease is the caller's; False when it is gone. Another's is PERMISSION_DENIED."""
        holder = await self.store.kv_get(f"{LEASE_OWNERS}{lease:x}")
        if holder is None:
            return False
        if holder.value.decode(errors="replace") != user.name:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, f'lease {lease:x} is not held by "{user.name}"')
        return True

    async def _lease_for_write(self, user: User, lease: int, context: grpc.aio.ServicerContext) -> int | None:
        if not lease:
            return None
        if not await self._own_lease(user, lease, context):
            await abort(context, grpc.StatusCode.NOT_FOUND, f"lease {lease:x} not found")
        return lease

    # -- reads ------------------------------------------------------------------------

    async def Get(self, request: storage_pb2.KeyRequest, context: grpc.aio.ServicerContext
                  ) -> storage_pb2.KeyValueReply:
        async with _store_errors(context):
            await self._allowed("Get", "get", request.key, context)
            kv = await self.store.kv_get(request.key)
            return storage_pb2.KeyValueReply(found=True, kv=_kv(kv)) if kv else storage_pb2.KeyValueReply()

    async def Range(self, request: storage_pb2.KeyRequest, context: grpc.aio.ServicerContext
                    ) -> AsyncIterator[storage_pb2.RangeReply]:
        async with _store_errors(context):
            await self._allowed("Range", "list", request.key, context, collection=True)
            kvs, revision = await self.store.kv_range(request.key)
        piece, size = storage_pb2.RangeReply(revision=revision), 0
        for kv in kvs:
            if size and size + len(kv.value) > RANGE_PIECE_BYTES:
                yield piece
                piece, size = storage_pb2.RangeReply(revision=revision), 0
            piece.kvs.append(_kv(kv))
            size += len(kv.key) + len(kv.value)
        yield piece

    async def Watch(self, request: storage_pb2.WatchRequest, context: grpc.aio.ServicerContext
                    ) -> AsyncIterator[storage_pb2.WatchReply]:
        key = request.key
        collection = key.endswith("/")
        async with _store_errors(context):
            await self._allowed("Watch", "watch", key, context, collection=collection)
            async with contextlib.aclosing(self.store.watch(key, request.start_revision)) as events:
                async for event in events:
                    # A key's watch is a prefix watch underneath: `a` must not see `a-2`.
                    if not collection and event.key != key:
                        continue
                    yield storage_pb2.WatchReply(events=[storage_pb2.WatchEvent(
                        delete=event.kind == WatchKind.DELETE,
                        kv=storage_pb2.KeyValue(key=event.key, value=event.value, mod_revision=event.revision))])

    # -- writes -----------------------------------------------------------------------

    async def Create(self, request: storage_pb2.WriteRequest, context: grpc.aio.ServicerContext
                     ) -> storage_pb2.WriteReply:
        async with _store_errors(context):
            user, target = await self._allowed("Create", "create", request.key, context)
            new = await self._decoded(target, request.key, request.value, context)
            await self._writable(target, "create", None, new, context)
            lease = await self._lease_for_write(user, request.lease, context)
            done = await self.store.kv_create(request.key, request.value, lease)
        if isinstance(done, int):
            return storage_pb2.WriteReply(succeeded=True, revision=done)
        return storage_pb2.WriteReply(current=_kv(done)) if done else storage_pb2.WriteReply()

    async def PutIf(self, request: storage_pb2.WriteRequest, context: grpc.aio.ServicerContext
                    ) -> storage_pb2.WriteReply:
        async with _store_errors(context):
            user = await self.gate.caller(context)
            target = await self._target(request.key, context, collection=False)
            new = await self._decoded(target, request.key, request.value, context)
            current = await self.store.kv_get(request.key)
            old = None
            if new is not None and current is not None and current.mod_revision == request.mod_revision:
                with contextlib.suppress(Undecodable):
                    old = decoded(target, request.key, current.value)
            subresource = "status" if old is not None and new is not None and status_only(old, new) else ""
            await self.gate.check("PutIf", user, target.request("update", subresource), context)
            if current is not None and current.mod_revision == request.mod_revision:
                await self._writable(target, "update", old, new, context)
            lease = await self._lease_for_write(user, request.lease, context)
            revision = await self.store.kv_put_if(request.key, request.value, request.mod_revision, lease)
        return storage_pb2.WriteReply(succeeded=revision is not None, revision=revision or 0)

    async def DeleteIf(self, request: storage_pb2.WriteRequest, context: grpc.aio.ServicerContext
                       ) -> storage_pb2.WriteReply:
        async with _store_errors(context):
            _, target = await self._allowed("DeleteIf", "delete", request.key, context)
            await self._writable(target, "delete", None, None, context)
            return storage_pb2.WriteReply(succeeded=await self.store.kv_delete_if(request.key, request.mod_revision))

    # -- leases -----------------------------------------------------------------------

    async def GrantLease(self, request: storage_pb2.LeaseRequest, context: grpc.aio.ServicerContext
                         ) -> storage_pb2.LeaseReply:
        async with _store_errors(context):
            user = await self.gate.caller(context)
            await self.gate.check("GrantLease", user, LEASE_GRANT, context)
            if not 1 <= request.ttl <= MAX_LEASE_TTL:
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                            f"ttl: must be between 1 and {MAX_LEASE_TTL} seconds, not {request.ttl}")
            lease = await self.store.grant_lease(int(request.ttl))
            await self.store.kv_create(f"{LEASE_OWNERS}{lease:x}", user.name.encode(), lease)
            return storage_pb2.LeaseReply(lease=lease, ttl=request.ttl)

    async def RefreshLease(self, request: storage_pb2.LeaseRequest, context: grpc.aio.ServicerContext
                           ) -> storage_pb2.LeaseReply:
        async with _store_errors(context):
            user = await self.gate.caller(context)
            if not await self._own_lease(user, request.lease, context):
                return storage_pb2.LeaseReply(lease=request.lease, ttl=0)
            return storage_pb2.LeaseReply(lease=request.lease, ttl=await self.store.refresh_lease(request.lease))

    async def RevokeLease(self, request: storage_pb2.LeaseRequest, context: grpc.aio.ServicerContext
                          ) -> storage_pb2.LeaseReply:
        async with _store_errors(context):
            user = await self.gate.caller(context)
            if await self._own_lease(user, request.lease, context):
                await self.store.revoke_lease(request.lease)
            return storage_pb2.LeaseReply(lease=request.lease)


@contextlib.asynccontextmanager
async def _store_errors(context: grpc.aio.ServicerContext) -> AsyncIterator[None]:
    """The store's errors as gRPC statuses the client (flotilla.store.remote) turns back into them."""
    try:
        yield
    except Compacted as e:
        await abort(context, grpc.StatusCode.OUT_OF_RANGE, f"{COMPACTED}{e.compacted_revision}")
    except Unavailable as e:
        await abort(context, grpc.StatusCode.UNAVAILABLE, str(e))
    except StoreError as e:
        log.warning("event=storage-error error=%s", e)
        await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
