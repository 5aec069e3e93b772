"""The execution controller (docs/karmada-rules.md §11): each Work applied to its member cluster with
server-side apply, and a deleted Work's objects deleted from the member before
its finalizer goes — in both cases only objects Flotilla owns (services/executor/ownership.py):
a same-named object it does not own is left as it is, and the Work reports the conflict
(Applied=False, an Event) unless it says `work.karmada.io/conflict-resolution: overwrite`.

The same class serves Push clusters (from the control plane) and, in the
Pull-mode agent, the one cluster the agent runs beside: `serves` says which
clusters are ours and `connect` gives the client for one.

For a kind with a ResourceInterpreterCustomization `retention` script, what is written over an
existing member object is `Retain(desired, observed)` (as Karmada's object watcher does before an
update), run in the interpreter pool; a script without an answer writes nothing (Applied=False
with the error, retried), so a member's own fields are never overwritten by a guess.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import jsonbytes, registry
from flotilla.api.clusters import cluster_ready
from flotilla.api.conditions import FALSE, TRUE, get_condition, set_condition
from flotilla.api.keys import cluster_of_execution_namespace, split_key
from flotilla.api.limits import truncate_message
from flotilla.api.v1 import cluster_pb2, meta_pb2, work_pb2
from flotilla.api.wellknown import (
    CRB_NAME_ANNOTATION,
    EXECUTION_FINALIZER,
    RB_NAME_ANNOTATION,
    RB_NAMESPACE_ANNOTATION,
)
from flotilla.interpreter.customized import RETAIN, CustomizedInterpreter
from flotilla.member import MemberError
from flotilla.member.watches import Connect
from flotilla.runtime.controller import Result
from flotilla.runtime.metrics import timed
from flotilla.runtime.tracecontext import context_from, failover_attributes
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import metrics
from services.executor.applied import AppliedGenerations, member_key
from services.executor.cached_write import CachedStatusWriter
from services.executor.member_writes import OwnershipConflict, Retain, RetainFailed, apply_owned, delete_owned
from services.executor.ownership import Apply

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("flotilla.executor")

APPLIED, DISPATCHING = "Applied", "Dispatching"
UNKNOWN = "Unknown"
# Karmada's EventReasonSyncWorkloadFailed, on the Work and on its resource template.
SYNC_FAILED = "SyncFailed"


# A Work whose cluster is not Ready waits for it: the cluster turning Ready re-enqueues the
# cluster's Works at once (routing.readiness_changed), so this is only a safety net. As an error
# retried with per-key backoff from 5 ms, every old Work of a failed member, deleted as its
# eviction task is dropped, would be tried again and again (each time with a warning line) for
# as long as the failover it is part of lasts.
CLUSTER_NOT_READY_RECHECK = 30.0


class ClusterNotReady(Exception):
    """The Work waits for its cluster (CLUSTER_NOT_READY_RECHECK)."""


def manifests(work: work_pb2.Work) -> list[dict[str, Any]]:
    return [jsonbytes.loads(raw) for raw in work.spec.workload.manifests]


def _applied_for_generation(work: work_pb2.Work) -> bool:
    condition = get_condition(work.status.conditions, APPLIED)
    return (condition is not None and condition.status == TRUE
            and condition.observed_generation == work.metadata.generation)


class ExecutionReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, works: Informer[work_pb2.Work],
                 clusters: Informer[cluster_pb2.Cluster], connect: Connect,
                 serves: Callable[[cluster_pb2.Cluster], bool], applied: AppliedGenerations | None = None,
                 events: EventRecorder | None = None, retainer: CustomizedInterpreter | None = None,
                 owns: Callable[[str], bool] | None = None) -> None:
        self.store = store
        # The clusters this replica's share holds (flotilla.store.shards); every one without sharing.
        self.owns = owns or _everything
        # The customizations' retention scripts (Retain), run before an object is written over.
        self.retainer = retainer
        self.clock = clock
        self.works = works
        self.clusters = clusters
        self.connect = connect
        self.serves = serves
        self.applied = applied or AppliedGenerations()
        self.events = events
        self.writer = CachedStatusWriter(store, assume_into=works)

    def admits(self, key: str) -> bool:
        """Only the Works of this replica's clusters are queued (flotilla.runtime.controller)."""
        cluster = work_cluster(key)
        return cluster is not None and self.owns(cluster)

    @timed(metrics.WORK_SYNC_WORKLOAD_DURATION)
    async def reconcile(self, key: str) -> Result | None:
        work: work_pb2.Work | None = self.works.get(key)
        if work is None:
            return None
        cluster_name = cluster_of_execution_namespace(work.metadata.namespace)
        if cluster_name is None or not self.owns(cluster_name):
            return None
        cluster = self.clusters.get(cluster_name)
        if cluster is not None and not self.serves(cluster):
            return None
        try:
            if work.metadata.HasField("deletion_timestamp"):
                await self._delete(work, cluster)
            else:
                await self._apply(work, cluster)
        except ClusterNotReady as e:
            log.debug("event=work-waits-for-cluster work=%s error=%s", key, e)
            return Result(requeue_after=CLUSTER_NOT_READY_RECHECK)
        return None

    async def _delete(self, work: work_pb2.Work, cluster: cluster_pb2.Cluster | None) -> None:
        if EXECUTION_FINALIZER not in work.metadata.finalizers:
            return
        keep = work.spec.preserve_resources_on_deletion
        # A cluster that is gone or being removed cannot be cleaned: release the Work.
        releasing = cluster is None or cluster.metadata.HasField("deletion_timestamp")
        if cluster is not None and not keep and not releasing:
            if not cluster_ready(cluster):
                raise ClusterNotReady(f"cluster({cluster.metadata.name}) not ready")
            client = await self.connect(cluster)
            for manifest in manifests(work):
                # Only an object Flotilla owns is deleted; another's stays where it is.
                try:
                    await delete_owned(client, manifest, cluster.metadata.name)
                except Exception as e:
                    metrics.count_delete(manifest, cluster.metadata.name, e)
                    raise
                metrics.count_delete(manifest, cluster.metadata.name, None)
                self.applied.forget(member_key(cluster.metadata.name, manifest))
        with _failover_span(work, "work.purge", "purge", cluster_of_execution_namespace(work.metadata.namespace) or "",
                            start=work.metadata.deletion_timestamp.ToNanoseconds()):
            await self._remove_finalizer(work)
        log.info("event=work-deleted work=%s/%s cluster_cleaned=%s", work.metadata.namespace, work.metadata.name,
                 not keep and not releasing)

    async def _remove_finalizer(self, work: work_pb2.Work) -> None:
        def change(obj: work_pb2.Work) -> bool:
            if EXECUTION_FINALIZER not in obj.metadata.finalizers:
                return False
            obj.metadata.finalizers.remove(EXECUTION_FINALIZER)
            return True

        try:
            await self.store.mutate(registry.WORK, work.metadata.namespace, work.metadata.name, change)
        except NotFound:
            return

    async def _apply(self, work: work_pb2.Work, cluster: cluster_pb2.Cluster | None) -> None:
        now = self.clock.now()
        generation = work.metadata.generation
        if work.spec.suspend_dispatching:
            await self._set_conditions(work, [(DISPATCHING, FALSE, "SuspendDispatching",
                                               "Work dispatching is in a suspended state.")], generation)
            return
        if _applied_for_generation(work):
            return
        if cluster is None or not cluster_ready(cluster):
            raise ClusterNotReady(f"cluster({cluster.metadata.name if cluster else '?'}) not ready")
        client = await self.connect(cluster)
        errors: list[MemberError | ValueError | OwnershipConflict] = []
        conflicts: list[tuple[dict[str, Any], OwnershipConflict]] = []
        items = manifests(work)
        first = get_condition(work.status.conditions, APPLIED) is None
        name = cluster.metadata.name
        with _failover_span(work, "work.apply", "apply", name) as span:
            for manifest in items:
                try:
                    done = await apply_owned(client, manifest, name, work.metadata.namespace, work.metadata.name,
                                             self._retain_for(manifest))
                    self.applied.record(member_key(name, manifest), done.answer, self.clock.monotonic())
                except (MemberError, ValueError, OwnershipConflict) as e:
                    errors.append(e)
                    if isinstance(e, OwnershipConflict):
                        conflicts.append((manifest, e))
                    metrics.count_apply(manifest, name, first, e)
                    continue
                metrics.count_apply(manifest, name, done.decision is Apply.CREATE, None)
            if span is not None and errors:
                span.set_status(trace.StatusCode.ERROR, truncate_message(str(errors[0])))
        if errors:
            # The errors quote the member's answers: cut to 1 KiB, the Work's status stays far
            # inside etcd's request limit however much a member says.
            applied = (APPLIED, FALSE, "AppliedFailed", truncate_message(
                f"Failed to apply all manifests ({len(items) - len(errors)}/{len(items)}): "
                f"{'; '.join(map(str, errors))}"))
        else:
            applied = (APPLIED, TRUE, "AppliedSuccessful", "Manifest has been successfully applied")
        await self._set_conditions(work, [
            (DISPATCHING, TRUE, "Dispatching", "Work is being dispatched to member clusters."), applied,
        ], generation)
        if conflicts:
            await self._conflict_events(work, name, applied[3], conflicts)
        log.info("event=work-applied work=%s/%s ok=%s at=%s", work.metadata.namespace, work.metadata.name,
                 not errors, now.isoformat())
        if errors:
            # Retried with backoff; the condition above already tells the user which failed.
            raise errors[0]

    def _retain_for(self, manifest: dict[str, Any]) -> Retain | None:
        """The kind's Retain script as apply_owned calls it; None when the kind has none."""
        retainer = self.retainer
        if retainer is None or not retainer.has(RETAIN, str(manifest.get("apiVersion", "")),
                                                str(manifest.get("kind", ""))):
            return None

        async def retain(desired: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
            assert retainer is not None
            answer = await retainer.retain(desired, observed)
            if not answer.ok:
                where = f"ResourceInterpreterCustomization {answer.customization}: " if answer.customization else ""
                raise RetainFailed(f"Retain of {desired.get('kind')} failed, nothing written: {where}{answer.error}")
            result: dict[str, Any] = answer.value
            return result

        return retain

    async def _conflict_events(self, work: work_pb2.Work, cluster: str, applied_message: str,
                               conflicts: list[tuple[dict[str, Any], OwnershipConflict]]) -> None:
        """Karmada's SyncFailed Events: on the Work, and on the resource template of each object
        left alone (`describe` of either says why). Repeats fold into one Event with a count."""
        if self.events is None:
            return
        key = f"{work.metadata.namespace}/{work.metadata.name}"
        await self.events.warning(work, SYNC_FAILED,
                                  f"Failed to sync work({key}) to cluster({cluster}), err: {applied_message}")
        for manifest, conflict in conflicts:
            meta = manifest.get("metadata") or {}
            template = meta_pb2.Unstructured(api_version=str(manifest.get("apiVersion", "")),
                                             kind=str(manifest.get("kind", "")))
            template.metadata.namespace, template.metadata.name = meta.get("namespace", ""), meta.get("name", "")
            await self.events.warning(template, SYNC_FAILED, f"Failed to create or update resource("
                                      f"{template.metadata.namespace}/{template.metadata.name}) in member "
                                      f"cluster({cluster}): {conflict}")

    async def _set_conditions(self, work: work_pb2.Work, conditions: list[tuple[str, str, str, str]],
                              generation: int) -> None:
        now = self.clock.now()

        def change(obj: work_pb2.Work) -> bool:
            changed = False
            previous = get_condition(obj.status.conditions, APPLIED)
            if previous is not None and previous.observed_generation != generation:
                # What was collected describes the member object before this apply.
                for manifest in obj.status.manifest_statuses:
                    changed |= manifest.health != UNKNOWN
                    manifest.health = UNKNOWN
            for type_, status, reason, message in conditions:
                changed |= set_condition(obj.status.conditions, type_, status, reason, message, now, generation)
            return changed

        try:
            await self.writer.mutate(registry.WORK, work.metadata.namespace, work.metadata.name,
                                     self.works.get(f"{work.metadata.namespace}/{work.metadata.name}"), change)
        except NotFound:
            return


def _everything(_: str) -> bool:
    return True


def work_cluster(key: str) -> str | None:
    namespace, _ = split_key(key)
    return cluster_of_execution_namespace(namespace)


@contextlib.contextmanager
def _failover_span(work: work_pb2.Work, name: str, step: str, cluster: str,
                   start: int | None = None) -> Iterator[trace.Span | None]:
    """A span of the failover trace the binding controller stamped on the Work, if it did."""
    parent = context_from(work.metadata.annotations)
    if parent is None:
        yield None
        return
    annotations = work.metadata.annotations
    namespace = annotations.get(RB_NAMESPACE_ANNOTATION, "")
    binding = f"{namespace}/{annotations[RB_NAME_ANNOTATION]}" if RB_NAME_ANNOTATION in annotations else \
        annotations.get(CRB_NAME_ANNOTATION, "")
    kind = "ResourceBinding" if RB_NAME_ANNOTATION in annotations else "ClusterResourceBinding"
    with _tracer.start_as_current_span(name, context=parent, start_time=start or None, attributes={
        **failover_attributes(step, cluster=cluster, binding=binding, kind=kind),
        "flotilla.work": f"{work.metadata.namespace}/{work.metadata.name}",
    }) as span:
        yield span
