"""Reaching the webhook service: where the plane's API is (flotilla.cli.connection: the
FLOTILLA_WEBHOOK_ADDRESS variable, e.g. a `kubectl port-forward` to the webhook Service of a
plane in a cluster, or the current context's), else found through the endpoint registry, like
every service (docs/deploy.md)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc

from flotilla.api.errors import UserError
from flotilla.api.v1 import webhook_pb2_grpc
from flotilla.cli.connection import API_ADDRESS_ENV, service_channel
from flotilla.store.base import StoreBase
from flotilla.store.endpoints import Endpoint, list_endpoints
from flotilla.store.remote import RemoteStore

R = TypeVar("R")
TIMEOUT = 30.0
ADDRESS_ENV = API_ADDRESS_ENV


class WebhookConflict(UserError):
    """The object changed since it was read (gRPC ABORTED)."""


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
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise UserError(e.details() or e.code().name) from e
                tried.append(address)
        raise UserError(f"cannot reach the webhook at {', '.join(tried)}")
