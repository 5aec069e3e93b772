"""`python -m services.webhook`: the admission service.

Every replica serves requests; there is no leader-only work.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import grpc

from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.webhook.admission import Admission
from services.webhook.defaulting import AdmissionConfig
from services.webhook.servicer import SERVICE, WebhookServicer, add_to_server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--default-not-ready-toleration-seconds", type=int, default=600,
                        help="NoExecute toleration added to policies for cluster.karmada.io/not-ready (0: none)")
    parser.add_argument("--default-unreachable-toleration-seconds", type=int, default=600,
                        help="NoExecute toleration added to policies for cluster.karmada.io/unreachable (0: none)")
    parser.add_argument("--allow-no-execute-taint-policy", default=True, action=argparse.BooleanOptionalAction,
                        help="allow ClusterTaintPolicies with NoExecute taints")


def add_servicers(server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
    config = AdmissionConfig(
        default_not_ready_toleration_seconds=ctx.args.default_not_ready_toleration_seconds,
        default_unreachable_toleration_seconds=ctx.args.default_unreachable_toleration_seconds,
        allow_no_execute_taint_policy=ctx.args.allow_no_execute_taint_policy,
    )
    # With a serving certificate the server demands client certificates, and writes name their owner.
    add_to_server(WebhookServicer(Admission(ctx.store, ctx.clock, config), ctx.events,
                                  require_identity=bool(ctx.args.tls_cert)), server)
    return [SERVICE]


SPEC = ServiceSpec(
    name="webhook",
    description="Flotilla admission: defaulting and validation of Karmada objects",
    add_arguments=add_arguments,
    add_servicers=add_servicers,
    leader_elect=False,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
