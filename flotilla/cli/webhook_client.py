"""Reaching the webhook service: where the plane's API is (flotilla.cli.connection: the
FLOTILLA_WEBHOOK_ADDRESS variable, e.g. a `kubectl port-forward` to the webhook Service of a
plane in a cluster, or the current context's), else found through the endpoint registry, like
every service (docs/deploy.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import grpc

from flotilla.api.errors import UserError
from flotilla.api.limits import MAX_BATCH_BYTES, MAX_BATCH_OBJECTS
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.cli.connection import API_ADDRESS_ENV, service_channel
from flotilla.store.base import StoreBase
from flotilla.store.endpoints import Endpoint, list_endpoints
from flotilla.store.remote import RemoteStore

R = TypeVar("R")
TIMEOUT = 30.0
ADDRESS_ENV = API_ADDRESS_ENV


class WebhookConflict(UserError):
    """The object changed since it was read (gRPC ABORTED)."""


class TooLarge(UserError):
    """The request is larger than the webhook takes (gRPC RESOURCE_EXHAUSTED)."""


def batches(objects_json: Sequence[bytes], max_objects: int = MAX_BATCH_OBJECTS,
            max_bytes: int = MAX_BATCH_BYTES) -> Iterator[Sequence[bytes]]:
    """The objects in order, in runs of at most `max_objects` objects and `max_bytes` bytes
    (an object larger than that alone)."""
    start, size = 0, 0
    for i, raw in enumerate(objects_json):
        if i > start and (i - start >= max_objects or size + len(raw) > max_bytes):
            yield objects_json[start:i]
            start, size = i, 0
        size += len(raw)
    if start < len(objects_json):
        yield objects_json[start:]


class WebhookClient:
    """Calls the webhook over one channel per replica, kept for the client's life (`async with`,
    or `close()`): a file of a thousand documents is one TLS handshake, not a thousand."""

    def __init__(self, store: StoreBase) -> None:
        self.store = store
        self._addresses: list[str] | None = None
        self._endpoints: dict[str, Endpoint] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}

    async def __aenter__(self) -> WebhookClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.close()

    def _channel(self, address: str) -> grpc.aio.Channel:
        if address not in self._channels:
            self._channels[address] = service_channel(self._endpoints.get(address, address), "webhook")
        return self._channels[address]

    async def addresses(self) -> list[str]:
        if self._addresses is None and os.environ.get(ADDRESS_ENV):
            self._addresses = [a.strip() for a in os.environ[ADDRESS_ENV].split(",") if a.strip()]
            self._endpoints = {}
        if self._addresses is None and isinstance(self.store, RemoteStore):
            self._addresses = list(self.store.addresses)
        if self._addresses is None:
            found = await list_endpoints(self.store, "webhook")
            if not found:
                raise UserError(
                    f"no webhook service is registered in etcd at {self.store.endpoints} (is `flotilla up` running?)"
                )
            self._addresses = [e.address for e in found]
            self._endpoints = {e.address: e for e in found}
        return self._addresses

    async def apply_batch(self, objects_json: Sequence[bytes], dry_run: bool = False, in_flight: int = 1
                          ) -> list[webhook_pb2.AdmissionBatchResult]:
        """Admit every object through ApplyBatch, one result per object in their order. The
        objects go in requests of at most MAX_BATCH_OBJECTS objects and MAX_BATCH_BYTES bytes
        (a larger single object alone), sent one after another so that the file order holds
        across them; a request the server still finds too large (a smaller --max-message-bytes)
        is split in two and sent again. `in_flight` > 1 sends that many requests at once, for
        objects that do not depend on one another (the order then holds within a request only)."""
        chunks = list(batches(objects_json))
        answers: list[list[webhook_pb2.AdmissionBatchResult]] = [[] for _ in chunks]
        slots = asyncio.Semaphore(max(1, in_flight))

        async def send(i: int) -> None:
            async with slots:
                answers[i] = await self._apply_chunk(chunks[i], dry_run)

        await asyncio.gather(*(send(i) for i in range(len(chunks))))
        return [result for answer in answers for result in answer]

    async def _apply_chunk(self, chunk: Sequence[bytes], dry_run: bool) -> list[webhook_pb2.AdmissionBatchResult]:
        request = webhook_pb2.AdmissionBatchRequest(objects_json=chunk, dry_run=dry_run)
        try:
            response: webhook_pb2.AdmissionBatchResponse = await self.call(lambda s: s.ApplyBatch, request)
        except TooLarge:
            if len(chunk) == 1:
                raise
            half = len(chunk) // 2
            return [*await self._apply_chunk(chunk[:half], dry_run), *await self._apply_chunk(chunk[half:], dry_run)]
        if len(response.results) != len(chunk):
            raise UserError(f"the webhook answered {len(response.results)} of {len(chunk)} objects")
        return list(response.results)

    async def call(self, method: Callable[[webhook_pb2_grpc.WebhookStub], Callable[..., Awaitable[R]]],
                   request: object) -> R:
        """Call one RPC, trying each registered replica until one answers."""
        tried = []
        for address in await self.addresses():
            try:
                return await method(webhook_pb2_grpc.WebhookStub(self._channel(address)))(request, timeout=TIMEOUT)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.ABORTED:
                    raise WebhookConflict(e.details() or "conflict") from e
                if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise TooLarge(e.details() or e.code().name) from e
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                    raise UserError(f"the webhook at {address} does not serve this call ({e.details()}): it runs "
                                    f"an older Flotilla than flotillactl") from e
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise UserError(e.details() or e.code().name) from e
                tried.append(address)
        raise UserError(f"cannot reach the webhook at {', '.join(tried)}")
