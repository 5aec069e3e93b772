"""Who calls the plane's API and whether they may: shared by admission and the storage API.

With TLS on, the caller is its client certificate (CN the user, each O a group, as Kubernetes'
x509 authenticator reads them); on a plain channel it is anonymous. Each decision is written to
the audit log.
"""

from __future__ import annotations

import grpc

from flotilla.security.rbac import Decision, Request, User
from flotilla.security.tls import peer_groups, peer_identity
from services.rpc import abort
from services.webhook.audit import AuditLog
from services.webhook.authorization import NOT_READY, AlwaysAllow, Authorizer

# Kubernetes' names for a caller without a certificate (a plane without TLS).
ANONYMOUS, UNAUTHENTICATED = "system:anonymous", "system:unauthenticated"
# How long a request waits for a replica that has just started to read the RBAC objects.
AUTHORIZER_WAIT = 10.0


class Gate:
    def __init__(self, authorizer: Authorizer | None = None, require_identity: bool = False,
                 audit: AuditLog | None = None) -> None:
        self.authorizer: Authorizer = authorizer or AlwaysAllow()
        self.require_identity = require_identity
        self.audit = audit

    async def caller(self, context: grpc.aio.ServicerContext) -> User:
        """Who calls; UNAVAILABLE while the authorizer cannot decide yet."""
        if not await self.authorizer.wait_ready(AUTHORIZER_WAIT):
            await abort(context, grpc.StatusCode.UNAVAILABLE, NOT_READY)
        identity = peer_identity(context)
        if not identity:
            if self.require_identity:
                # mTLS already refuses a caller without a certificate; this guards a server set up otherwise.
                await abort(context, grpc.StatusCode.UNAUTHENTICATED, "a client certificate is needed")
            return User(ANONYMOUS, frozenset({UNAUTHENTICATED}))
        return User.of(identity, peer_groups(context))

    def decide(self, method: str, user: User, request: Request, decision: Decision) -> Decision:
        if self.audit is not None:
            self.audit.record(method, user, request, decision)
        return decision

    async def check(self, method: str, user: User, request: Request, context: grpc.aio.ServicerContext) -> None:
        """Authorize and audit; a denial ends the call with PERMISSION_DENIED in Kubernetes' words."""
        decision = self.decide(method, user, request, self.authorizer.authorize(user, request))
        if not decision.allowed:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, decision.reason)
