"""The binding controller (docs/karmada-rules.md §10): ResourceBindings and ClusterResourceBindings -> Works.

One code path for both kinds, keyed `Kind:namespace/name`. A pass reads the binding, the
template and the binding's Works from the informers, and decides with
`works`: orphans are deleted (a Work deleted for a Directly task is marked so first); while
a Work of a Directly task is still there, nothing else happens: the binding carries the
`DirectlyPurgePending` condition naming the clusters it waits for and why, and is looked at
again as soon as that Work is gone (its deletion event routes here) or, as a safety net,
after DIRECTLY_REQUEUE_SECONDS. A dead cluster cannot confirm the deletion; unjoining it
releases the Work (the execution controller lets Works of a terminating cluster go).
Otherwise each target cluster's Work is created or brought up to date, each with one
compare-and-swap on a fresh read (the execution controller writes Work status all the time);
a preserved label that is no valid label is left out of them, and the binding carries the
`StatePreservationFailed` condition saying which rule's value it was (flotilla/rules/preserved_labels.py).
A deleting binding has its Works deleted, then loses its finalizer.
For a kind with a ResourceInterpreterCustomization `replicaRevision` script, each cluster's copy
is `ReviseReplica(template, share)`, run in the interpreter pool before the Works are built; a
script without an answer leaves every Work as it is (a Warning event ReviseReplicaFailed, and a
retry), never a whole unrevised copy per cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.protobuf.message import Message
from opentelemetry import trace

from flotilla.aio.clock import Clock, RealClock
from flotilla.api import bindings, keys, registry, wellknown
from flotilla.api.bindings import Binding, binding_key, parse_binding_key
from flotilla.api.clusters import cluster_ready
from flotilla.api.conditions import TRUE, get_condition, remove_condition, set_condition
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import DIRECTLY_PURGE_PENDING_CONDITION, TRACEPARENT_ANNOTATION
from flotilla.interpreter.customized import REVISE_REPLICA, CustomizedInterpreter
from flotilla.rules import preserved_labels
from flotilla.rules.aggregated_status import expected_clusters
from flotilla.rules.binding_builder import template_object
from flotilla.runtime.controller import Result
from flotilla.runtime.metrics import timed
from flotilla.runtime.own_writes import OwnWrites
from flotilla.runtime.tracecontext import context_from, failover_attributes, traceparent
from flotilla.store import AlreadyExists, NotFound, ObjectStore, StoreError
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import cached_read, metrics, works

log = logging.getLogger(__name__)

# Karmada polls a binding held by a Directly task every 5 s. Here the old Work's deletion event
# brings the binding back; this is only a safety net.
DIRECTLY_REQUEUE_SECONDS = 60.0
CLUSTER_NOT_READY = "ClusterNotReady"
WORK_DELETING = "WorkDeleting"

M = TypeVar("M", bound=Message)

BINDING_ID_INDEX = "binding-id"
BINDING_REF_INDEX = "binding-ref"


def template_type(binding: Binding) -> ResourceType[meta_pb2.Unstructured] | None:
    """The resource type of the binding's template; None when it names a built-in kind."""
    resource = binding.spec.resource
    try:
        rt = registry.for_kind(resource.api_version, resource.kind)
    except registry.UnknownResourceError:
        return None
    return rt if rt.is_template else None


def binding_ref_of_work(work: work_pb2.Work) -> str | None:
    """The key of the binding a Work's annotations point at."""
    annotations = work.metadata.annotations
    for kind in bindings.BINDING_KINDS:
        if name := annotations.get(kind.name_annotation):
            namespace = annotations.get(kind.namespace_annotation, "") if kind.namespace_annotation else ""
            return binding_key(kind.kind, keys.object_key(namespace, name))
    return None


def index_works(informer: Informer[work_pb2.Work]) -> None:
    """The indices the executor finds a binding's Works by: its permanent id, and its key."""
    informer.add_indexer(BINDING_ID_INDEX, works.work_binding_ids)
    informer.add_indexer(BINDING_REF_INDEX, lambda w: [ref] if (ref := binding_ref_of_work(w)) else [])


def works_of(informer: Informer[work_pb2.Work], key: str, binding: Binding | None) -> list[work_pb2.Work]:
    """Works labelled with the binding's permanent id, or pointing at its key (an earlier
    binding of the same name leaves those behind)."""
    found = set(informer.index_keys(BINDING_REF_INDEX, key))
    binding_id = works.binding_id(binding) if binding is not None else ""
    if binding_id:
        # Mostly the same Works as by the key: each is decoded once.
        found.update(informer.index_keys(BINDING_ID_INDEX, binding_id))
    return [work for work in map(informer.get, sorted(found)) if work is not None]


@dataclass
class _Pass:
    """The clusters whose Works one pass wrote, and those whose Works it waits on."""

    written: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)


class BindingReconciler:
    def __init__(
        self,
        store: ObjectStore,
        works_informer: Informer[work_pb2.Work],
        inject_preserved_labels: bool = False,
        events: EventRecorder | None = None,
        tracer: trace.Tracer | None = None,
        directly_requeue: float = DIRECTLY_REQUEUE_SECONDS,
        clock: Clock | None = None,
        bindings_informers: Mapping[str, Informer[Binding]] | None = None,
        templates: Mapping[str, Informer[meta_pb2.Unstructured]] | None = None,
        overrider: works.Overrider | None = None,
        interpreter: CustomizedInterpreter | None = None,
    ) -> None:
        self.store = store
        # The customizations' replicaRevision scripts (ReviseReplica), run before the pure build_works.
        self.interpreter = interpreter
        self.works = works_informer
        # Binding informers by kind and template informers by etcd resource, read when synced
        # (a template kind's informer starts when something first names it); else etcd.
        self.bindings = bindings_informers or {}
        self.templates = templates if templates is not None else {}
        self.inject_preserved_labels = inject_preserved_labels
        # Each cluster's override policies (services/executor/overrides.py); None: none apply.
        self.overrider = overrider
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.executor")
        self.directly_requeue = directly_requeue
        self.clock = clock or RealClock()
        # The Works this controller wrote: their echoes need no pass (routing in controllers.py).
        self.own_writes = OwnWrites()

    @timed(metrics.BINDING_SYNC_WORK_DURATION)
    async def reconcile(self, key: str) -> Result | None:
        rt, namespace, name = parse_binding_key(key)
        binding = await cached_read.read(self.store, self.bindings.get(rt.kind), rt, namespace, name)
        existing = works_of(self.works, key, binding)
        done = _Pass()
        if binding is None:
            # Its finalizer was taken away by someone else: whatever it left is an orphan.
            await self._delete(existing, key)
            return None
        if works.is_deleting(binding):
            await self._delete(existing, key)
            await self._release(rt, binding)
            return None
        if not works.binding_id(binding):
            # Admission gives every binding its permanent id; without it its Works could not be found.
            log.warning("event=skip-binding binding=%s reason=NoPermanentID", key)
            return None
        await self._delete(works.orphan_works(existing, expected_clusters(binding.spec)), key,
                           directly=works.directly_clusters(binding.spec), failed_over=binding)
        blocked = works.directly_blocking(binding.spec, existing)
        if blocked:
            await self._report_pending(rt, binding, blocked)
            log.info("event=wait-directly-purge binding=%s clusters=%s", key, ",".join(blocked))
            return Result(requeue_after=self.directly_requeue)
        template = await self._template(binding)
        if template is None:
            await self._report_pending(rt, binding, [])
            return None
        revisions = await self._revisions(binding, template)
        if isinstance(revisions, str):
            # No Work is built from an unrevised copy (each cluster would run the whole workload):
            # every cluster keeps the Work it has until the script answers.
            log.warning("event=revise-replica-failed binding=%s error=%s", key, revisions)
            await self._event(binding, template, "Warning", "ReviseReplicaFailed",
                              f"Failed to revise replicas of {_describe(binding)}: {revisions}")
            return Result(requeue_after=self.directly_requeue)
        failed: list[tuple[str, str]] = []
        desired = works.build_works(binding, template, self.inject_preserved_labels, self.overrider, failed,
                                    revisions)
        try:
            with self._span(binding, key, desired) as stamp:
                for work in desired:
                    await self._ensure(work, stamp, done, key)
            # Only now: while the condition is set the eviction service keeps the Directly task,
            # whose preserved state the new Works just written carry.
            await self._report_pending(rt, binding, [], written=True)
        except StoreError as e:
            await self._event(binding, template, "Warning", "SyncWorkFailed",
                              f"Failed to sync work of {_describe(binding)}: {e}")
            raise
        if done.written:
            await self._event(binding, template, "Normal", "SyncWorkSucceed",
                              f"Sync work of {_describe(binding)} successful.")
        for cluster, reason in failed:
            # Karmada's event; the cluster keeps the Work it had until the policy is fixed (its
            # change routes the binding here again) or the retry below succeeds.
            log.warning("event=apply-overrides-failed binding=%s cluster=%s reason=%s", key, cluster, reason)
            await self._event(binding, template, "Warning", "ApplyOverridePolicyFailed",
                              f"Apply override policies for cluster({cluster}) failed: {reason}")
        if done.waiting or failed:
            return Result(requeue_after=self.directly_requeue)
        return None

    async def _revisions(self, binding: Binding,
                         template: meta_pb2.Unstructured) -> dict[int, dict[str, Any]] | str | None:
        """The template revised by the kind's ReviseReplica script for each share the Works need;
        None when the kind has no such script; the error when one share has no answer."""
        if self.interpreter is None or not self.interpreter.has(REVISE_REPLICA, template.api_version, template.kind):
            return None
        obj = template_object(template)
        revisions: dict[int, dict[str, Any]] = {}
        for share in works.revised_shares(binding):
            answer = await self.interpreter.revise_replica(obj, share)
            if not answer.ok:
                return f"{answer.customization}: {answer.error}" if answer.customization else answer.error
            revisions[share] = answer.value
        return revisions

    async def _template(self, binding: Binding) -> meta_pb2.Unstructured | None:
        rt = template_type(binding)
        if rt is None:
            log.warning("event=skip-binding binding=%s reason=NotATemplateKind", bindings.key_of(binding))
            return None
        resource = binding.spec.resource
        return await cached_read.read(self.store, self.templates.get(rt.resource), rt, resource.namespace,
                                      resource.name)

    @contextlib.contextmanager
    def _span(self, binding: Binding, key: str, desired: list[work_pb2.Work]) -> Iterator[str]:
        """Continue the failover trace stamped on the binding while a failover is under way
        (an eviction task is open); yields the traceparent to stamp on the Works this pass
        writes ("" for none)."""
        parent = context_from(binding.metadata.annotations)
        if parent is None or not binding.spec.graceful_eviction_tasks or not self._has_changes(desired):
            yield ""
            return
        with self.tracer.start_as_current_span(
            "binding.sync-works", context=parent,
            attributes={**failover_attributes("sync-works", binding=key.partition(":")[2], kind=key.partition(":")[0]),
                        "flotilla.clusters": ",".join(works.work_cluster(w) or "" for w in desired)},
        ) as span:
            yield traceparent(span)

    def _has_changes(self, desired: list[work_pb2.Work]) -> bool:
        for work in desired:
            current = self.works.get(f"{work.metadata.namespace}/{work.metadata.name}")
            if current is None or not works.carries(current, work):
                return True
        return False

    async def _ensure(self, desired: work_pb2.Work, stamp: str, done: _Pass, key: str) -> None:
        meta = desired.metadata
        cluster = works.work_cluster(desired) or ""
        current = self.works.get(f"{meta.namespace}/{meta.name}")
        if current is None:
            new = work_pb2.Work()
            new.CopyFrom(desired)
            new.metadata.labels[wellknown.WORK_PERMANENT_ID_LABEL] = str(uuid.uuid4())
            if stamp:
                new.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
            try:
                # Assumed at once, so the execution side applies it without waiting for the watch.
                created = await self.store.create(new)
                self.own_writes.record(created)
                await self.works.assume(created)
                done.written.append(cluster)
                log.info("event=create-work binding=%s cluster=%s work=%s/%s", key, cluster, meta.namespace, meta.name)
                return
            except AlreadyExists:
                pass  # the informer has not shown it yet: update it below
        elif works.is_deleting(current):
            done.waiting.append(cluster)
            return
        elif works.carries(current, desired):
            return

        def change(work: work_pb2.Work) -> bool:
            if works.is_deleting(work):
                done.waiting.append(cluster)
                return False
            merged = works.merge_work(work, desired)
            if merged == work:
                return False
            if stamp:
                merged.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
            else:
                # Written outside a failover: the member apply that follows is no step of one.
                merged.metadata.annotations.pop(TRACEPARENT_ANNOTATION, None)
            work.CopyFrom(merged)
            done.written.append(cluster)
            return True

        try:
            updated = await self.store.mutate(registry.WORK, meta.namespace, meta.name, change)
        except NotFound:
            # Deleted since the create failed: the next pass creates it.
            done.waiting.append(cluster)
            return
        if cluster in done.written:
            self.own_writes.record(updated)
            log.info("event=update-work binding=%s cluster=%s work=%s/%s", key, cluster, meta.namespace, meta.name)

    async def _report_pending(self, rt: ResourceType[Binding], binding: Binding, blocked: list[str],
                              written: bool = False) -> None:
        """Set the DirectlyPurgePending condition while `blocked` is not empty, remove it after.

        Once the binding's new Works are `written`, StatePreservationFailed is brought up to date
        in the same write (a Directly failover clears the one and reports the other at once):
        True while they were built without a preserved label that is no valid label, gone
        otherwise. Either costs a write only when it changes."""
        generation = binding.metadata.generation
        preservation = works.state_preservation_report(binding.spec) if written and self.inject_preserved_labels \
            else None
        update_preservation = written and not preserved_labels.reported(binding.status.conditions, preservation,
                                                                         generation)
        if (not blocked and not update_preservation
                and get_condition(binding.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION) is None):
            return
        reason, message = await self._pending_reason(blocked) if blocked else ("", "")
        now = self.clock.now()
        if update_preservation and preservation is not None:
            log.warning("event=state-preservation-failed binding=%s reason=%s message=%s",
                        bindings.key_of(binding), *preservation)

        def change(obj: Binding) -> bool:
            changed = False
            if update_preservation:
                # The report of the spec the Works were built from, for its generation.
                changed = preserved_labels.set_failed_condition(obj.status.conditions, preservation, now, generation)
            if not blocked:
                return remove_condition(obj.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION) or changed
            return set_condition(obj.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION, TRUE, reason, message, now,
                                 obj.metadata.generation) or changed

        with contextlib.suppress(NotFound):
            await self.store.mutate(rt, binding.metadata.namespace, binding.metadata.name, change, status=True)

    async def _pending_reason(self, blocked: list[str]) -> tuple[str, str]:
        """Why the new Works wait: a cluster that is not Ready cannot confirm the deletion."""
        unready = []
        for name in blocked:
            cluster = await self.store.try_get(registry.CLUSTER, "", name)
            if (cluster is not None and not cluster.metadata.HasField("deletion_timestamp")
                    and not cluster_ready(cluster)):
                unready.append(name)
        waiting = (f"purgeMode Directly: the new Works are created once the old Work in cluster(s) "
                   f"{', '.join(blocked)} is deleted")
        if unready:
            return CLUSTER_NOT_READY, (f"{waiting}; {', '.join(unready)} is not Ready and cannot confirm the "
                                       f"deletion: it completes when the cluster is back, or once it is unjoined")
        return WORK_DELETING, f"{waiting}; the member is deleting it"

    async def _delete(self, doomed: list[work_pb2.Work], key: str, directly: set[str] | None = None,
                      failed_over: Binding | None = None) -> None:
        for work in doomed:
            if works.is_deleting(work):
                continue
            marks = self._deletion_marks(work, directly, failed_over)

            def mark(obj: work_pb2.Work, marks: dict[str, str] = marks) -> None:
                obj.metadata.annotations.update(marks)

            with contextlib.suppress(NotFound):
                # The marks go in the write that marks the Work deleted: one write, and whoever
                # sees the deletion sees them.
                marked = await self.store.delete(registry.WORK, work.metadata.namespace, work.metadata.name,
                                                 change=mark)
                if marked is not None:
                    self.own_writes.record(marked)
            log.info("event=delete-work binding=%s cluster=%s work=%s/%s", key, works.work_cluster(work),
                     work.metadata.namespace, work.metadata.name)

    @staticmethod
    def _deletion_marks(work: work_pb2.Work, directly: set[str] | None, failed_over: Binding | None) -> dict[str, str]:
        """The annotations a Work being deleted carries.

        A Work deleted for a Directly task is marked so: until it is gone, the binding's new
        Works wait, even once the task has been dropped. The old copy of a failed-over binding
        carries the binding's failover trace, so its purge (the execution controller's span
        when the Work is finally gone) joins it.
        """
        cluster = works.work_cluster(work)
        marks = {}
        if directly and cluster in directly:
            marks[works.DIRECTLY_PURGE_ANNOTATION] = "true"
        if failed_over is not None:
            stamp = failed_over.metadata.annotations.get(TRACEPARENT_ANNOTATION, "")
            if stamp and any(r.from_cluster == cluster for r in failed_over.status.failover_history):
                marks[TRACEPARENT_ANNOTATION] = stamp
        return marks

    async def _release(self, rt: ResourceType[Binding], binding: Binding) -> None:
        finalizer = bindings.kind_named(rt.kind).finalizer
        if finalizer not in binding.metadata.finalizers:
            return

        def change(obj: Binding) -> bool:
            if finalizer not in obj.metadata.finalizers:
                return False
            obj.metadata.finalizers.remove(finalizer)
            return True

        with contextlib.suppress(NotFound):
            await self.store.mutate(rt, binding.metadata.namespace, binding.metadata.name, change)
        log.info("event=release-binding binding=%s", bindings.key_of(binding))

    async def _event(
        self, binding: Binding, template: meta_pb2.Unstructured, type_: str, reason: str, message: str
    ) -> None:
        if self.events is None:
            return
        # A service's recorder is an EventQueue: this only queues them, beside the pass.
        await asyncio.gather(self.events.record(binding, type_, reason, message),
                             self.events.record(template, type_, reason, message))


def _describe(binding: Binding) -> str:
    if isinstance(binding, work_pb2.ResourceBinding):
        return f"resourceBinding({binding.metadata.namespace}/{binding.metadata.name})"
    return f"clusterResourceBinding({binding.metadata.name})"
