"""Member status back into Works (docs/karmada-rules.md §11, work-status controller).

A reconciler keyed by Work: it reads the member objects the Work carries from the cluster's
watch caches (`flotilla.member.watches`) and writes the Work's manifestStatuses (the
member object's status and its interpreted health) with one compare-and-swap, only when they
changed. A member object changing enqueues the Works that carry it, so its status reaches the
Work within one reconcile. An object missing from the member marks its Work not applied, so the
execution controller applies it again; so does one that is no longer Flotilla's (replaced since
the apply by an object it does not own, services/executor/ownership.py): its status is not the
Work's, and the execution controller decides what to do about it (leave it and report the
conflict, or take it over under Overwrite).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any

from flotilla.aio.clock import Clock
from flotilla.api import codec, jsonbytes, registry
from flotilla.api.conditions import FALSE, get_condition, set_condition
from flotilla.api.keys import cluster_of_execution_namespace, execution_namespace, split_key
from flotilla.api.registry import split_api_version
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.interpreter.customized import REFLECT_STATUS, CustomizedInterpreter
from flotilla.interpreter.health import UNKNOWN, HealthInterpreter
from flotilla.member.watches import MemberWatches
from flotilla.runtime.controller import Result
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor.applied import AppliedGenerations, member_key
from services.executor.cached_write import CachedStatusWriter
from services.executor.execution import APPLIED, manifests, work_cluster
from services.executor.ownership import owned
from services.executor.routing import WORK_NAMESPACE_INDEX

log = logging.getLogger(__name__)

ObjectIndex = dict[tuple[str, str, str, str], dict[str, Any]]  # (apiVersion, kind, namespace, name)

# How long an object this executor applied may stay absent from its member's watch cache before
# it is taken for missing: the apply's own event normally arrives within milliseconds, and a
# watch that broke lists the member again when it comes back.
APPLY_REPORT_GRACE = 30.0

# Works by the member objects they carry: "<cluster>/<apiVersion>/<kind>/<namespace>/<name>".
MEMBER_OBJECT_INDEX = "member-object"


def member_object(cluster: str, api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{cluster}/{api_version}/{kind}/{namespace}/{name}"


def member_objects_of(work: work_pb2.Work) -> list[str]:
    """The index values of a Work: one per manifest."""
    cluster = cluster_of_execution_namespace(work.metadata.namespace)
    if cluster is None:
        return []
    return [member_object(cluster, *_address(raw)) for raw in work.spec.workload.manifests]


@functools.lru_cache(maxsize=1024)
def _address(raw: bytes) -> tuple[str, str, str, str]:
    """A manifest's apiVersion, kind, namespace and name. The index asks for them at every change
    of its Work (twice: the version before and after), mostly a status written: the manifests are
    parsed once while their Work changes."""
    manifest = jsonbytes.loads(raw)
    meta = manifest.get("metadata") or {}
    return manifest["apiVersion"], manifest["kind"], meta.get("namespace", ""), meta.get("name", "")


# What a Work records of one member object's status: far above a Deployment's or a Job's, and a
# few of them still fit in one etcd value (1.5 MiB).
MAX_REFLECTED_STATUS_BYTES = 256 * 1024


async def manifest_statuses(work: work_pb2.Work, members: ObjectIndex, interpreter: HealthInterpreter,
                            reflector: CustomizedInterpreter | None = None,
                            reflect_errors: list[str] | None = None) -> tuple[
        list[work_pb2.ManifestStatus], list[str], list[str]]:
    """The statuses to record, the manifests missing from the member, and interpretation errors.

    A Lua health script runs in the interpreter's worker pool: this awaits it, and the loop
    serves everything else meanwhile; one that overruns its limit reads Unknown.

    The status recorded is the member object's `status`, or, for a kind with a
    ResourceInterpreterCustomization `statusReflection` script, what `ReflectStatus(observed)`
    returns. A script without an answer records {} (as health reads Unknown: nothing is made
    up), and its error is appended to `reflect_errors`.
    """
    statuses, missing, errors = [], [], []
    for ordinal, manifest in enumerate(manifests(work)):
        meta = manifest.get("metadata") or {}
        key = (manifest["apiVersion"], manifest["kind"], meta.get("namespace", ""), meta["name"])
        observed = members.get(key)
        if observed is None:
            missing.append(f"{manifest['kind']} {meta.get('namespace', '')}/{meta['name']}")
            continue
        group, version = split_api_version(manifest["apiVersion"])
        # The interpreter picks its rule by apiVersion and kind, which list items may lack.
        whole = {**observed, "apiVersion": manifest["apiVersion"], "kind": manifest["kind"]}
        result = await interpreter.interpret(whole)
        if result.error:
            errors.append(f"ResourceInterpreterCustomization {result.customization}: {result.error}"
                          if result.customization else result.error)
        status = codec.raw_json(await _reflected(reflector, whole, manifest, meta, reflect_errors)
                                if reflector is not None and reflector.has(REFLECT_STATUS, *whole_kind(whole))
                                else observed.get("status") or {})
        if len(status) > MAX_REFLECTED_STATUS_BYTES:
            # The member decides how large its status is; the Work, one etcd value, must stay
            # writable. Its health was judged on the whole object all the same.
            errors.append(f"{manifest['kind']} {meta.get('namespace', '')}/{meta['name']}: its status is "
                          f"{len(status)} bytes, more than the {MAX_REFLECTED_STATUS_BYTES} a Work records; "
                          "recorded as {}")
            status = codec.raw_json({})
        statuses.append(work_pb2.ManifestStatus(
            identifier=work_pb2.ResourceIdentifier(
                ordinal=ordinal, group=group, version=version, kind=manifest["kind"],
                namespace=meta.get("namespace", ""), name=meta["name"]),
            status=status,
            health=result.health,
        ))
    return statuses, missing, errors


def whole_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["apiVersion"], obj["kind"]


async def _reflected(reflector: CustomizedInterpreter, observed: dict[str, Any], manifest: dict[str, Any],
                     meta: dict[str, Any], errors: list[str] | None) -> Any:
    answer = await reflector.reflect_status(observed)
    if answer.ok:
        return answer.value
    if errors is not None:
        where = f"{manifest['kind']} {meta.get('namespace', '')}/{meta['name']}"
        errors.append(f"{where}: ResourceInterpreterCustomization {answer.customization}: {answer.error}"
                      if answer.customization else f"{where}: {answer.error}")
    return {}


class WorkStatusReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, works: Informer[work_pb2.Work],
                 clusters: Informer[cluster_pb2.Cluster], watches: MemberWatches, interpreter: HealthInterpreter,
                 events: EventRecorder | None = None, applied: AppliedGenerations | None = None,
                 reflector: CustomizedInterpreter | None = None, owns: Callable[[str], bool] | None = None) -> None:
        self.store = store
        # The clusters this replica's share holds (flotilla.store.shards); every one without sharing.
        self.owns = owns or (lambda _: True)
        # The customizations' statusReflection scripts; None: every kind records its `status`.
        self.reflector = reflector
        self.clock = clock
        self.works = works
        self.clusters = clusters
        self.watches = watches
        self.interpreter = interpreter
        self.events = events
        self.applied = applied or AppliedGenerations()
        self.writer = CachedStatusWriter(store, assume_into=works)

    def works_of(self, cluster: str, api_version: str, kind: str, objects: Iterable[tuple[str, str]]) -> list[str]:
        """The keys of the Works carrying these member objects."""
        return [key for namespace, name in objects
                for key in self.works.index_keys(MEMBER_OBJECT_INDEX,
                                                 member_object(cluster, api_version, kind, namespace, name))]

    def works_of_cluster(self, cluster: str) -> list[str]:
        return list(self.works.index_keys(WORK_NAMESPACE_INDEX, execution_namespace(cluster)))

    def admits(self, key: str) -> bool:
        """Only the Works of this replica's clusters are queued (flotilla.runtime.controller)."""
        cluster_name = work_cluster(key)
        return cluster_name is not None and self.owns(cluster_name)

    async def reconcile(self, key: str) -> Result | None:
        work = self.works.get(key)
        if work is None or work.metadata.HasField("deletion_timestamp"):
            return None
        cluster_name = cluster_of_execution_namespace(split_key(key)[0])
        cluster = self.clusters.get(cluster_name) if cluster_name and self.owns(cluster_name) else None
        if cluster is None:
            return None
        applied = get_condition(work.status.conditions, APPLIED)
        if applied is None or applied.status != "True":
            return None
        members: ObjectIndex = {}
        foreign: list[str] = []
        for manifest in manifests(work):
            api_version, kind = manifest["apiVersion"], manifest["kind"]
            cache = self.watches.cache(cluster, (api_version, kind))
            if cache is None or not cache.synced:
                return None  # not watched (not Ready), or not listed yet: the list enqueues this Work
            meta = manifest.get("metadata") or {}
            namespace, name = meta.get("namespace", ""), meta.get("name", "")
            observed = cache.get((namespace, name))
            member = member_key(cluster.metadata.name, manifest)
            if observed is None:
                waited = self.applied.unreported_for(member, self.clock.monotonic())
                if waited is not None and waited < APPLY_REPORT_GRACE:
                    # Created by the last apply, not in the cache yet: its event enqueues this Work.
                    return Result(requeue_after=APPLY_REPORT_GRACE - waited)
                continue
            if self.applied.behind(member, observed):
                return None  # the cache has not seen the last apply yet; that apply's event enqueues this Work
            self.applied.reported(member)
            if not owned(observed, manifest):
                foreign.append(f"{kind} {namespace}/{name}")
                continue
            members[(api_version, kind, namespace, name)] = observed
        await self._record(work, applied.observed_generation, members, foreign)
        return None

    async def _record(self, work: work_pb2.Work, applied_generation: int, members: ObjectIndex,
                      foreign: list[str]) -> None:
        reflect_errors: list[str] = []
        statuses, missing, errors = await manifest_statuses(work, members, self.interpreter, self.reflector,
                                                            reflect_errors)
        missing = [m for m in missing if m not in foreign]
        problems = [f"Manifest is missing in the member cluster: {', '.join(missing)}"] if missing else []
        if foreign:
            problems.append(f"Manifest is held by an object Flotilla does not manage in the member cluster: "
                            f"{', '.join(foreign)}")
        if applied_generation != work.metadata.generation:
            # The member has not been given this version of the Work yet: what it reports
            # describes the previous one, and must not read as the new one being healthy.
            for status in statuses:
                status.health = UNKNOWN
        now = self.clock.now()
        changed = [False]  # what the last try of `change` found, the one whose write stands

        def change(obj: work_pb2.Work) -> bool:
            changed[0] = False
            if obj.metadata.generation != work.metadata.generation:
                return False  # changed since it was read; its event enqueues it again
            before = obj.status.SerializeToString(deterministic=True)
            del obj.status.manifest_statuses[:]
            obj.status.manifest_statuses.extend(statuses)
            if problems:
                set_condition(obj.status.conditions, APPLIED, FALSE, "AppliedFailed", "; ".join(problems), now,
                              obj.metadata.generation)
            changed[0] = obj.status.SerializeToString(deterministic=True) != before
            return changed[0]

        # Most reconciles (the Work's own status event among them) change nothing: no write then.
        try:
            written = await self.writer.mutate(registry.WORK, work.metadata.namespace, work.metadata.name, work,
                                               change)
        except NotFound:
            return
        if not changed[0]:
            return
        if errors and self.events is not None:
            await self.events.warning(written, "InterpretHealthFailed", errors[0])
        if reflect_errors and self.events is not None:
            # Karmada's reason; the status is recorded as {} until the script answers.
            await self.events.warning(written, "ReflectStatusFailed", reflect_errors[0])
