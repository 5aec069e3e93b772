"""Every method of a service's own gRPC API is authorized (none slips through unnamed), and a
service with no webhook to ask refuses rather than allows."""

from __future__ import annotations

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import scheduler_pb2, status_pb2, taint_manager_pb2
from flotilla.runtime.delegated_authorization import AccessReviewer, ReviewUnavailable
from flotilla.security.rbac import Request
from services.scheduler.__main__ import SPEC as SCHEDULER
from services.status.__main__ import SPEC as STATUS
from services.taint_manager.__main__ import SPEC as TAINT_MANAGER


@pytest.mark.parametrize(("spec", "descriptor", "service"), [
    (SCHEDULER, scheduler_pb2.DESCRIPTOR, "Scheduler"),
    (STATUS, status_pb2.DESCRIPTOR, "ClusterHealth"),
    (TAINT_MANAGER, taint_manager_pb2.DESCRIPTOR, "TaintManager"),
], ids=["scheduler", "status", "taint_manager"])
def test_every_method_is_authorized(spec: object, descriptor: object, service: str) -> None:
    full = descriptor.services_by_name[service]  # type: ignore[attr-defined]
    methods = {f"/{full.full_name}/{m.name}" for m in full.methods}
    assert set(spec.access) == methods  # type: ignore[attr-defined]


async def test_no_webhook_means_no_answer_not_yes() -> None:
    async def none() -> list[str]:
        return []

    reviewer = AccessReviewer(none, None, FakeClock())
    with pytest.raises(ReviewUnavailable):
        await reviewer.review("ann", frozenset(), Request("get", "", "pods"))
