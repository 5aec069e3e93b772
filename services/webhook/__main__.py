"""`python -m services.webhook`: the admission service.

Every replica serves requests and authorizes them (services/webhook/authorization.py); there
is no leader-only work.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import grpc

from flotilla.api.v1 import storage_pb2_grpc
from flotilla.runtime.manager import Manager
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.webhook.admission import Admission
from services.webhook.audit import AuditLog
from services.webhook.authorization import RBAC_TYPES, AlwaysAllow, Authorizer, RBACAuthorizer
from services.webhook.callers import Gate
from services.webhook.defaulting import AdmissionConfig
from services.webhook.servicer import SERVICE, WebhookServicer, add_to_server
from services.webhook.storage import STORAGE_SERVICE, StorageServicer

RBAC, ALWAYS_ALLOW = "RBAC", "AlwaysAllow"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--default-not-ready-toleration-seconds", type=int, default=600,
                        help="NoExecute toleration added to policies for cluster.karmada.io/not-ready (0: none)")
    parser.add_argument("--default-unreachable-toleration-seconds", type=int, default=600,
                        help="NoExecute toleration added to policies for cluster.karmada.io/unreachable (0: none)")
    parser.add_argument("--allow-no-execute-taint-policy", default=True, action=argparse.BooleanOptionalAction,
                        help="allow ClusterTaintPolicies with NoExecute taints")
    parser.add_argument("--authorization-mode", choices=(RBAC, ALWAYS_ALLOW), default=RBAC,
                        help="RBAC: every request is authorized by the Role/ClusterRole bindings of the caller's "
                             "certificate (CN the user, O its groups); AlwaysAllow: none is (a plane without "
                             "TLS, whose callers have no identity)")
    parser.add_argument("--audit-log-path", default="-",
                        help="one JSON line per request and its decision, to this file ('-': stdout, '': none)")


class WebhookService:
    """Admission on every replica; each keeps the RBAC objects its authorizer reads in informers
    of its own manager, run as the replica's (unelected) `lead`."""

    def __init__(self) -> None:
        self.manager: Manager | None = None

    def add_servicers(self, server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
        args = ctx.args
        config = AdmissionConfig(
            default_not_ready_toleration_seconds=args.default_not_ready_toleration_seconds,
            default_unreachable_toleration_seconds=args.default_unreachable_toleration_seconds,
            allow_no_execute_taint_policy=args.allow_no_execute_taint_policy,
        )
        authorizer: Authorizer
        if args.authorization_mode == RBAC:
            if not args.tls_cert:
                raise SystemExit("webhook: --authorization-mode RBAC needs TLS (--tls-cert): without client "
                                 "certificates no caller has an identity to authorize; use AlwaysAllow for a "
                                 "plane without TLS")
            self.manager = ctx.manager()
            authorizer = RBACAuthorizer({kind: self.manager.informer(rt) for kind, rt in RBAC_TYPES.items()})
        else:
            authorizer = AlwaysAllow()
        audit = AuditLog(args.audit_log_path, ctx.clock) if args.audit_log_path else None
        # With a serving certificate the server demands client certificates, and writes name their owner.
        gate = Gate(authorizer, require_identity=bool(args.tls_cert), audit=audit)
        add_to_server(WebhookServicer(Admission(ctx.store, ctx.clock, config), ctx.events, gate), server)
        storage_pb2_grpc.add_StorageServicer_to_server(StorageServicer(ctx.store, gate), server)
        return [SERVICE, STORAGE_SERVICE]

    async def lead(self, ctx: ServiceContext) -> None:
        if self.manager is not None:
            await self.manager.run()


_SERVICE = WebhookService()
SPEC = ServiceSpec(
    name="webhook",
    description="Flotilla admission: defaulting and validation of Karmada objects",
    add_arguments=add_arguments,
    add_servicers=_SERVICE.add_servicers,
    lead=_SERVICE.lead,
    leader_elect=False,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
