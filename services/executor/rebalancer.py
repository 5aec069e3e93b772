"""WorkloadRebalancer (apps.karmada.io/v1alpha1): Karmada's manual reschedule, the way users
move workloads back after a recovery when failback is off.

For each workload it names, the controller sets its binding's `spec.rescheduleTriggeredAt` to
the rebalancer's creationTimestamp (unless the binding already asks for a reschedule at least
that recent); the scheduler then schedules that binding afresh, as for a new one
(flotilla/scheduler/placement.py, `reschedule_requested`). Each workload's result goes to
`status.observedWorkloads`: Successful once its binding carries the trigger, Failed
(ReferencedBindingNotFound) when it has no binding. A binding that could not be written is
tried again with backoff. When every workload has a result, `status.finishTime` is set, and
`ttlSecondsAfterFinished` after it the rebalancer deletes itself (never, when unset).

Karmada's controller (pkg/controllers/workloadrebalancer), in the executor as it is in
Karmada's controller-manager: a pass runs for a rebalancer created or whose spec changed
(generation), and again at its TTL. When the spec changes, a workload still listed keeps its
result; one no longer listed is kept only if Successful; a new one is rebalanced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from flotilla.aio.clock import Clock
from flotilla.api import keys, registry
from flotilla.api.bindings import Binding
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1.apps_pb2 import (
    ObservedWorkload,
    RebalanceObjectReference,
    WorkloadRebalancer,
    WorkloadRebalancerStatus,
)
from flotilla.runtime.controller import Controller, Reconciler, Result
from flotilla.runtime.manager import Manager
from flotilla.store import Conflict, NotFound, ObjectStore
from flotilla.store.base import copy_of, object_key_of
from flotilla.store.errors import StoreError
from flotilla.store.informer import Informer

log = logging.getLogger(__name__)

SUCCESSFUL = "Successful"
FAILED = "Failed"
BINDING_NOT_FOUND = "ReferencedBindingNotFound"

Ref = tuple[str, str, str, str]


class RebalanceRetry(Exception):
    """Some workloads' bindings could not be written: the pass is retried with backoff."""


def _ref(workload: RebalanceObjectReference) -> Ref:
    return workload.api_version, workload.kind, workload.namespace, workload.name


def sync_workloads(rebalancer: WorkloadRebalancer) -> list[ObservedWorkload]:
    """status.observedWorkloads brought in line with spec.workloads, Karmada's way: a workload
    still listed keeps its result; one no longer listed stays only if it was Successful; a new one
    is added without a result. Sorted by apiVersion, kind, namespace and name."""
    wanted: dict[Ref, RebalanceObjectReference] = {_ref(w): w for w in rebalancer.spec.workloads}
    observed: list[ObservedWorkload] = []
    for item in rebalancer.status.observed_workloads:
        ref = _ref(item.workload)
        if ref in wanted:
            del wanted[ref]
            observed.append(_copy(item))
        elif item.result == SUCCESSFUL:
            observed.append(_copy(item))
    observed.extend(ObservedWorkload(workload=workload) for workload in wanted.values())
    observed.sort(key=lambda item: " ".join(_ref(item.workload)))
    return observed


def _copy(item: ObservedWorkload) -> ObservedWorkload:
    copy = ObservedWorkload()
    copy.CopyFrom(item)
    return copy


def needs_trigger(rebalancer: WorkloadRebalancer, binding: Binding) -> bool:
    """Karmada's needTriggerReschedule: the binding asks for no reschedule yet, or an older one."""
    if not binding.spec.HasField("reschedule_triggered_at"):
        return True
    created = rebalancer.metadata.creation_timestamp.ToNanoseconds()
    return created > binding.spec.reschedule_triggered_at.ToNanoseconds()


def remaining_ttl(rebalancer: WorkloadRebalancer, now: datetime) -> timedelta | None:
    """How long until a finished rebalancer is deleted; None while it is kept (no TTL, or not
    finished)."""
    spec, status = rebalancer.spec, rebalancer.status
    if not spec.HasField("ttl_seconds_after_finished") or not status.HasField("finish_time"):
        return None
    expires = status.finish_time.ToDatetime(tzinfo=UTC) + timedelta(seconds=spec.ttl_seconds_after_finished)
    return expires - now


class RebalancerReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, rebalancers: Informer[WorkloadRebalancer]) -> None:
        self.store = store
        self.clock = clock
        self.rebalancers = rebalancers

    async def reconcile(self, key: str) -> Result | None:
        rebalancer = self.rebalancers.get(key)
        if rebalancer is None or rebalancer.metadata.HasField("deletion_timestamp"):
            return None
        observed = sync_workloads(rebalancer)
        retry = await self._trigger(rebalancer, observed)
        status = WorkloadRebalancerStatus(observed_workloads=observed,
                                          observed_generation=rebalancer.metadata.generation)
        if rebalancer.status.HasField("finish_time"):
            status.finish_time.CopyFrom(rebalancer.status.finish_time)
        if status != rebalancer.status:
            if not retry:
                status.finish_time.FromDatetime(self.clock.now())
            updated = copy_of(rebalancer)
            updated.status.CopyFrom(status)
            try:
                rebalancer = await self.store.update_status(updated, original=rebalancer)
            except NotFound:
                return None
            except Conflict:
                # Changed since the cache read: the next pass reads the newer version.
                return Result(requeue_after=0.1)
        if retry:
            raise RebalanceRetry(f"workloadrebalancer {key}: {retry} workload(s) to retry")
        return await self._expire(key, rebalancer)

    async def _trigger(self, rebalancer: WorkloadRebalancer, observed: Sequence[ObservedWorkload]) -> int:
        """Set rescheduleTriggeredAt on the binding of every workload without a result yet; the
        number of those whose binding could not be written (to retry)."""
        retry = 0
        for item in observed:
            if item.result:
                continue
            workload = item.workload
            kind: registry.ResourceType[Binding] = (registry.RESOURCE_BINDING if workload.namespace
                                                    else registry.CLUSTER_RESOURCE_BINDING)

            def change(binding: Binding) -> bool:
                if not needs_trigger(rebalancer, binding):
                    return False
                binding.spec.reschedule_triggered_at.CopyFrom(rebalancer.metadata.creation_timestamp)
                return True

            try:
                await self.store.mutate(kind, workload.namespace, keys.binding_name(workload.name, workload.kind),
                                        change)
            except NotFound:
                item.result, item.reason = FAILED, BINDING_NOT_FOUND
            except StoreError as e:
                log.warning("workloadrebalancer %s: %s %s: %s", rebalancer.metadata.name, workload.kind,
                            keys.object_key(workload.namespace, workload.name), e)
                retry += 1
            else:
                item.result = SUCCESSFUL
        return retry

    async def _expire(self, key: str, rebalancer: WorkloadRebalancer) -> Result | None:
        left = remaining_ttl(rebalancer, self.clock.now())
        if left is None:
            return None
        if left > timedelta(0):
            return Result(requeue_after=left.total_seconds())
        try:
            await self.store.delete(registry.WORKLOAD_REBALANCER, "", rebalancer.metadata.name,
                                    resource_version=rebalancer.metadata.resource_version)
        except NotFound:
            pass
        except Conflict:
            return Result(requeue_after=0.1)
        return None


def spec_changed(event: WatchEvent[WorkloadRebalancer]) -> bool:
    """Created, or its spec changed (generation): its own status writes bring it back only
    through the TTL's requeue."""
    if event.type is EventType.DELETED:
        return False
    return event.old is None or event.old.metadata.generation != event.obj.metadata.generation


def add_rebalancer(manager: Manager, store: ObjectStore, clock: Clock,
                   own: Callable[[Reconciler], Reconciler] = lambda r: r,
                   ) -> tuple[Informer[WorkloadRebalancer], Controller]:
    """The WorkloadRebalancer controller on `manager` (its reconciler wrapped by `own`, for the
    keys this replica holds); its informer and controller."""
    rebalancers = manager.informer(registry.WORKLOAD_REBALANCER)
    controller = manager.controller("workload-rebalancer", own(RebalancerReconciler(store, clock, rebalancers)))
    manager.watch(rebalancers, lambda event: [object_key_of(event.obj)], controller, predicate=spec_changed)
    return rebalancers, controller
