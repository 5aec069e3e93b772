"""Member status back into Works (docs/karmada-rules.md §11, work-status controller).

Per cluster and per period: one list per kind the cluster's Works carry (not one
GET per object), then each Work's manifestStatuses (the member object's status
and its interpreted health) written with one compare-and-swap when they changed.
An object missing from the member marks its Work not applied, so the execution
controller applies it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from flotilla.api import codec, registry
from flotilla.api.conditions import FALSE, get_condition, is_true, set_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.registry import split_api_version
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.interpreter.health import UNKNOWN, HealthInterpreter
from flotilla.member import MemberError
from flotilla.runtime.clock import Clock
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor.execution import APPLIED, Connect, manifests

log = logging.getLogger(__name__)

ObjectIndex = dict[tuple[str, str, str, str], dict[str, Any]]  # (apiVersion, kind, namespace, name)


def manifest_statuses(work: work_pb2.Work, members: ObjectIndex,
                      interpreter: HealthInterpreter) -> tuple[list[work_pb2.ManifestStatus], list[str], list[str]]:
    """The statuses to record, the manifests missing from the member, and interpretation errors."""
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
        result = interpreter.interpret({**observed, "apiVersion": manifest["apiVersion"], "kind": manifest["kind"]})
        if result.error:
            errors.append(result.error)
        statuses.append(work_pb2.ManifestStatus(
            identifier=work_pb2.ResourceIdentifier(
                ordinal=ordinal, group=group, version=version, kind=manifest["kind"],
                namespace=meta.get("namespace", ""), name=meta["name"]),
            status=codec.raw_json(observed.get("status") or {}),
            health=result.health,
        ))
    return statuses, missing, errors


class WorkStatusCollector:
    def __init__(self, store: ObjectStore, clock: Clock, works: Informer[work_pb2.Work],
                 clusters: Informer[cluster_pb2.Cluster], connect: Connect,
                 serves: Callable[[cluster_pb2.Cluster], bool], interpreter: HealthInterpreter,
                 events: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.works = works
        self.clusters = clusters
        self.connect = connect
        self.serves = serves
        self.interpreter = interpreter
        self.events = events

    async def collect(self, cluster: cluster_pb2.Cluster) -> None:
        if not self.serves(cluster) or not is_true(cluster.status.conditions, "Ready"):
            return
        works = [w for w in self.works.by_index("namespace", execution_namespace(cluster.metadata.name))
                 if not w.metadata.HasField("deletion_timestamp")]
        if not works:
            return
        client = await self.connect(cluster)
        kinds = {(m["apiVersion"], m["kind"]) for w in works for m in manifests(w)}
        members: ObjectIndex = {}
        try:
            for api_version, kind in sorted(kinds):
                for obj in await client.list(api_version, kind):
                    meta = obj.get("metadata") or {}
                    members[(api_version, kind, meta.get("namespace", ""), meta.get("name", ""))] = obj
        except MemberError as e:
            log.info("event=status-collection-failed cluster=%s error=%s", cluster.metadata.name, e)
            return
        for work in works:
            await self._record(work, members)

    async def _record(self, work: work_pb2.Work, members: ObjectIndex) -> None:
        applied = get_condition(work.status.conditions, APPLIED)
        if applied is None or applied.status != "True":
            return
        statuses, missing, errors = manifest_statuses(work, members, self.interpreter)
        if applied.observed_generation != work.metadata.generation:
            # The member has not been given this version of the Work yet: what it reports
            # describes the previous one, and must not read as the new one being healthy.
            for status in statuses:
                status.health = UNKNOWN
        now = self.clock.now()

        def change(obj: work_pb2.Work) -> bool:
            if obj.metadata.generation != work.metadata.generation:
                return False  # changed since the member was read; the next round collects it
            before = obj.status.SerializeToString(deterministic=True)
            del obj.status.manifest_statuses[:]
            obj.status.manifest_statuses.extend(statuses)
            if missing:
                set_condition(obj.status.conditions, APPLIED, FALSE, "AppliedFailed",
                              f"Manifest is missing in the member cluster: {', '.join(missing)}", now,
                              obj.metadata.generation)
            return obj.status.SerializeToString(deterministic=True) != before

        try:
            written = await self.store.mutate(registry.WORK, work.metadata.namespace, work.metadata.name, change,
                                              status=True)
        except NotFound:
            return
        if errors and self.events is not None:
            await self.events.warning(written, "InterpretHealthFailed", errors[0])

    async def run(self, period: float) -> None:
        while True:
            clusters = [c for c in self.clusters.list() if self.serves(c)]
            results = await asyncio.gather(*(self.collect(c) for c in clusters), return_exceptions=True)
            for cluster, result in zip(clusters, results, strict=True):
                if isinstance(result, Exception):
                    log.warning("event=status-collection-error cluster=%s error=%s", cluster.metadata.name, result)
            await self.clock.sleep(period)
