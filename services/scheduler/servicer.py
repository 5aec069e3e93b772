"""gRPC face of the scheduler: Explain (its decision for one binding now) and WhatIf
(a capacity forecast for failing clusters). Both read the store and write nothing, so
every replica serves them, leader or not."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.bindings import BINDING_KINDS, Binding
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import scheduler_pb2, scheduler_pb2_grpc
from flotilla.rules.scheduler_state import handled_by
from flotilla.scheduler import core
from flotilla.scheduler.capacity import NoReservations, Reservations
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.messages import decision_message
from flotilla.scheduler.need_schedule import need_schedule
from flotilla.scheduler.whatif import what_if
from flotilla.security.rbac import Request
from flotilla.security.storage_access import SYSTEM_GROUP
from flotilla.store import ObjectStore
from services.rpc import abort
from services.scheduler.reconciler import SchedulerOptions

_SERVICE = scheduler_pb2.DESCRIPTOR.services_by_name["Scheduler"].full_name
# What each call is, for RBAC (flotilla.runtime.delegated_authorization): an explanation reads a
# binding; a forecast is computed fleet-wide, as Kubernetes' reviews are created.
ACCESS = {
    f"/{_SERVICE}/Explain": Request("get", registry.RESOURCE_BINDING.group, registry.RESOURCE_BINDING.plural),
    f"/{_SERVICE}/WhatIf": Request("create", SYSTEM_GROUP, "whatifs"),
}

KINDS: dict[str, ResourceType[Binding]] = {kind.kind: kind.resource_type for kind in BINDING_KINDS}


class SchedulerServicer(scheduler_pb2_grpc.SchedulerServicer):
    def __init__(self, store: ObjectStore, clock: Clock, framework: Framework, options: SchedulerOptions,
                 reservations: Callable[[], Reservations] = NoReservations) -> None:
        self.store = store
        self.clock = clock
        self.framework = framework
        self.options = options
        # The leader's ledger while this replica leads: explain then answers what the loop would decide.
        self.reservations = reservations
        # One forecast at a time per replica: each schedules every affected binding of the fleet.
        self._forecasting = asyncio.Lock()

    async def Explain(self, request: scheduler_pb2.ExplainRequest, context: grpc.aio.ServicerContext
                      ) -> scheduler_pb2.ScheduleDecision:
        rt = KINDS.get(request.kind)
        if rt is None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                        f"kind must be one of {', '.join(KINDS)}, not {request.kind!r}")
        binding = await self.store.try_get(rt, request.namespace, request.name)
        if binding is None:
            where = f"{request.namespace}/{request.name}" if rt.namespaced else request.name
            await abort(context, grpc.StatusCode.NOT_FOUND, f"{rt.kind} {where} not found")
        clusters = (await self.store.list(registry.CLUSTER)).items
        snapshot = core.Snapshot.of(clusters, self.clock.now(), self.reservations())
        decision = core.schedule(binding, snapshot, self.framework, self.options.empty_workload_propagation,
                                 self.options.multiple_pod_templates)
        if handled_by(binding, self.options.scheduler_name):
            deleting = {c.name for c in snapshot.clusters if c.deleting}
            trigger = need_schedule(binding, deleting)
            trigger_text = trigger.value if trigger is not None else "None"
        else:
            trigger_text = "NotHandled"
        return decision_message(binding, decision, trigger_text, live=True)

    async def WhatIf(self, request: scheduler_pb2.WhatIfRequest, context: grpc.aio.ServicerContext
                     ) -> scheduler_pb2.WhatIfReport:
        """Scheduled off the event loop (in a thread, on objects read for it alone), one at a time:
        a forecast over thousands of bindings must not stall the leader's scheduling, and callers
        asking at once get RESOURCE_EXHAUSTED rather than a queue of them."""
        if self._forecasting.locked():
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                        "a forecast is being computed on this scheduler replica; try again when it is done")
        async with self._forecasting:
            return await self._what_if(request, context)

    async def _what_if(self, request: scheduler_pb2.WhatIfRequest, context: grpc.aio.ServicerContext
                       ) -> scheduler_pb2.WhatIfReport:
        clusters = (await self.store.list(registry.CLUSTER)).items
        known = {c.metadata.name for c in clusters}
        unknown = sorted(set(request.clusters) - known)
        if not request.clusters or unknown:
            problem = f"unknown cluster(s) {', '.join(unknown)}" if unknown else "name at least one cluster"
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, problem)
        bindings: list[Binding] = []
        for rt in KINDS.values():
            bindings.extend((await self.store.list(rt)).items)
        result = await asyncio.to_thread(what_if, bindings, clusters, list(request.clusters), self.framework,
                                         self.clock.now(), self.options.scheduler_name,
                                         self.options.empty_workload_propagation,
                                         self.options.multiple_pod_templates)
        report = scheduler_pb2.WhatIfReport(failed_clusters=result.failed, unaffected=result.unaffected)
        for forecast in result.forecasts:
            meta, decision = forecast.binding.metadata, forecast.decision
            item = report.bindings.add(kind=forecast.binding.kind, namespace=meta.namespace, name=meta.name,
                                       error="" if decision.ok else decision.message,
                                       reason=decision.outcome.value)
            for name, replicas in forecast.before:
                item.before.add(name=name, replicas=replicas)
            if decision.ok:
                for name, replicas in decision.clusters or []:
                    item.after.add(name=name, replicas=replicas)
        return report
