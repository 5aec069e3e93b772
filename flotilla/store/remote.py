"""A store reached through the plane's storage API (services/webhook/storage.py) instead of etcd:
what a Pull agent, which runs inside a member cluster, and a person with `flotillactl` use, so
that neither needs an etcd credential and each does only what RBAC allows.

Everything built on a store's primitives (objects, informers, leader election, the endpoint
registry, Events) runs unchanged on it. The API's answers map back onto the store's errors:
UNAVAILABLE is `Unavailable` (the next replica is tried), OUT_OF_RANGE is `Compacted`,
PERMISSION_DENIED is `Forbidden`. Secrets arrive decrypted, over mutual TLS: the API holds the
encryption key, not the caller.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TypeVar

import grpc

from flotilla.aio.clock import Clock, RealClock
from flotilla.api.v1 import storage_pb2, storage_pb2_grpc
from flotilla.security.tls import TLSFiles, grpc_channel, service_server_name
from flotilla.store.base import KeyEvent, KeyValue, StoreBase, WatchKind
from flotilla.store.errors import Compacted, Forbidden, StoreError, Unavailable

T = TypeVar("T")
# The webhook serves the API; callers verify its certificate's name.
SERVICE = "webhook"
TIMEOUT = 30.0
COMPACTED = "compacted:"
_RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _kv(kv: storage_pb2.KeyValue) -> KeyValue:
    return KeyValue(kv.key, bytes(kv.value), int(kv.mod_revision))


def store_error(error: grpc.aio.AioRpcError, where: str) -> StoreError:
    code, details = error.code(), error.details() or error.code().name
    if code in _RETRIED:
        return Unavailable(f"{where}: {details}")
    if code == grpc.StatusCode.OUT_OF_RANGE and details.startswith(COMPACTED):
        return Compacted(int(details.removeprefix(COMPACTED)))
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return Forbidden(details)
    return StoreError(f"{where}: {details}")


class RemoteStore(StoreBase):
    def __init__(self, addresses: Sequence[str], tls: TLSFiles | None, clock: Clock | None = None,
                 timeout: float = TIMEOUT) -> None:
        if not addresses:
            raise ValueError("the plane's API: no address")
        self.addresses = list(addresses)
        self.tls = tls
        self.clock = clock or RealClock()
        self.timeout = timeout
        self.endpoints = ",".join(self.addresses)
        self._channels: dict[str, grpc.aio.Channel] = {}
        # The replica that answered last is asked first.
        self._preferred = 0

    def _stub(self, address: str) -> storage_pb2_grpc.StorageStub:
        if address not in self._channels:
            self._channels[address] = grpc_channel(address, self.tls, service_server_name(SERVICE) if self.tls else "")
        return storage_pb2_grpc.StorageStub(self._channels[address])

    def _order(self) -> list[str]:
        return self.addresses[self._preferred:] + self.addresses[:self._preferred]

    async def _call(self, call: Callable[[storage_pb2_grpc.StorageStub], Awaitable[T]]) -> T:
        """One call, on each replica in turn until one answers."""
        error: grpc.aio.AioRpcError | None = None
        for address in self._order():
            try:
                answer = await call(self._stub(address))
            except grpc.aio.AioRpcError as e:
                if e.code() not in _RETRIED:
                    raise store_error(e, f"the plane's API at {address}") from e
                error = e
                continue
            self._preferred = self.addresses.index(address)
            return answer
        assert error is not None
        raise store_error(error, f"the plane's API at {self.endpoints}") from error

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.close()

    # -- key-value primitives ----------------------------------------------

    async def kv_get(self, key: str) -> KeyValue | None:
        reply = await self._call(lambda s: s.Get(storage_pb2.KeyRequest(key=key), timeout=self.timeout))
        return _kv(reply.kv) if reply.found else None

    async def kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        async def ranged(stub: storage_pb2_grpc.StorageStub) -> tuple[builtins.list[KeyValue], int]:
            kvs: builtins.list[KeyValue] = []
            revision = 0
            async for piece in stub.Range(storage_pb2.KeyRequest(key=prefix), timeout=self.timeout):
                kvs.extend(_kv(kv) for kv in piece.kvs)
                revision = int(piece.revision)
            return kvs, revision
        return await self._call(ranged)

    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        reply = await self._call(lambda s: s.Create(
            storage_pb2.WriteRequest(key=key, value=value, lease=lease or 0), timeout=self.timeout))
        if reply.succeeded:
            return int(reply.revision)
        return _kv(reply.current) if reply.HasField("current") else None

    async def kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        reply = await self._call(lambda s: s.PutIf(storage_pb2.WriteRequest(
            key=key, value=value, mod_revision=mod_revision, lease=lease or 0), timeout=self.timeout))
        return int(reply.revision) if reply.succeeded else None

    async def kv_delete_if(self, key: str, mod_revision: int) -> bool:
        reply = await self._call(lambda s: s.DeleteIf(
            storage_pb2.WriteRequest(key=key, mod_revision=mod_revision), timeout=self.timeout))
        return bool(reply.succeeded)

    async def grant_lease(self, ttl: int) -> int:
        reply = await self._call(lambda s: s.GrantLease(storage_pb2.LeaseRequest(ttl=ttl), timeout=self.timeout))
        return int(reply.lease)

    async def refresh_lease(self, lease: int) -> int:
        reply = await self._call(lambda s: s.RefreshLease(storage_pb2.LeaseRequest(lease=lease),
                                                          timeout=self.timeout))
        return int(reply.ttl)

    async def revoke_lease(self, lease: int) -> None:
        await self._call(lambda s: s.RevokeLease(storage_pb2.LeaseRequest(lease=lease), timeout=self.timeout))

    async def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[KeyEvent, None]:
        address = self._order()[0]
        call = self._stub(address).Watch(storage_pb2.WatchRequest(key=prefix, start_revision=start_revision))
        try:
            async for reply in call:
                for event in reply.events:
                    kind = WatchKind.DELETE if event.delete else WatchKind.PUT
                    yield KeyEvent(kind, event.kv.key, bytes(event.kv.value), int(event.kv.mod_revision))
        except grpc.aio.AioRpcError as e:
            if e.code() in _RETRIED:
                # The next watch (an informer starts one) tries the next replica.
                self._preferred = (self.addresses.index(address) + 1) % len(self.addresses)
            raise store_error(e, f"the plane's API at {address}: watch") from e
        finally:
            call.cancel()
        raise Unavailable(f"the plane's API at {address}: the watch ended")
