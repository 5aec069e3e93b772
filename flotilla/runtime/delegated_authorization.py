"""Who may call a service's own gRPC API (Explain, WhatIf, GetClusterHealth, GetEvictionState):
the webhook decides, with the same RBAC as every other request to the plane, as a Kubernetes
kubelet asks the API server with a SubjectAccessReview (`--authorization-mode=Webhook`).

Each service names the RBAC request each of its methods is (`ServiceSpec.access`); health and
reflection are not authorized. The service asks the webhook's ReviewAccess about the caller (its
certificate's CN and O) with its own client certificate, which is in the group
`system:flotilla:services` that the bootstrap policy lets ask about anyone. Answers are cached
for a few seconds, allowed and denied alike; with no webhook answering, the call is refused
(UNAVAILABLE), never allowed for want of an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from flotilla.aio.clock import Clock
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.security.rbac import Decision, Request
from flotilla.security.tls import TLSFiles, grpc_channel, peer_groups, peer_identity, service_server_name

log = logging.getLogger(__name__)

CACHE_SECONDS = 10.0
TIMEOUT = 5.0
NO_REVIEWER = "cannot authorize the call: no webhook service answers"

Addresses = Callable[[], Awaitable[list[str]]]


class ReviewUnavailable(Exception):
    """No webhook answered."""


class AccessReviewer:
    def __init__(self, addresses: Addresses, tls: TLSFiles | None, clock: Clock,
                 ttl: float = CACHE_SECONDS) -> None:
        self.addresses = addresses
        self.tls = tls
        self.clock = clock
        self.ttl = ttl
        self._answers: dict[tuple[str, frozenset[str], Request], tuple[float, Decision]] = {}

    async def review(self, user: str, groups: frozenset[str], request: Request) -> Decision:
        key = (user, groups, request)
        now = self.clock.monotonic()
        cached = self._answers.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        decision = await self._ask(user, groups, request)
        if len(self._answers) > 10_000:  # callers are few; a flood of new ones must not grow it for ever
            self._answers.clear()
        self._answers[key] = (now, decision)
        return decision

    async def _ask(self, user: str, groups: frozenset[str], request: Request) -> Decision:
        asked = webhook_pb2.AccessReviewRequest(
            verb=request.verb, api_group=request.api_group, resource=request.resource,
            subresource=request.subresource, namespace=request.namespace, name=request.name,
            user=user, groups=sorted(groups))
        try:
            addresses = await self.addresses()
        except Exception as e:  # the registry unreadable (etcd away): no answer, so no call
            raise ReviewUnavailable(f"{NO_REVIEWER} ({e})") from e
        for address in addresses:
            async with grpc_channel(address, self.tls, service_server_name("webhook") if self.tls else "") as channel:
                try:
                    answer = await webhook_pb2_grpc.WebhookStub(channel).ReviewAccess(asked, timeout=TIMEOUT)
                except grpc.aio.AioRpcError as e:
                    log.warning("event=access-review-failed address=%s code=%s details=%s", address, e.code().name,
                                e.details())
                    continue
            return Decision(bool(answer.allowed), answer.reason)
        raise ReviewUnavailable(NO_REVIEWER)


class Authorizing(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc's stubs leave it untyped
    """Authorizes each call of the methods in `access` (full method name -> the RBAC request it
    is) before the servicer sees it."""

    def __init__(self, reviewer: AccessReviewer, access: Mapping[str, Request]) -> None:
        self.reviewer = reviewer
        self.access = access

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        wanted = self.access.get(details.method)
        if wanted is None or handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        reviewer = self.reviewer

        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            user = peer_identity(context)
            if not user:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a client certificate is needed")
            try:
                decision = await reviewer.review(user, frozenset(peer_groups(context)), wanted)
            except ReviewUnavailable as e:
                await context.abort(grpc.StatusCode.UNAVAILABLE, str(e))
            if not decision.allowed:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, decision.reason)
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(checked, request_deserializer=handler.request_deserializer,
                                                   response_serializer=handler.response_serializer)
