"""Status aggregation (docs/karmada-rules.md §10, end): Works -> binding `status.aggregatedStatus` and
`FullyApplied`, and the members' workload statuses -> the resource template's status.

Pure functions. The template status follows Karmada's native AggregateStatus:
- Deployment, StatefulSet, ReplicaSet, DaemonSet: the members' counters summed (the fields
  Karmada sums; others already in the template's status are kept). `observedGeneration`
  becomes the template's generation only when every member caught up: it runs the template's
  current generation (`resourceTemplateGeneration` in the collected status, else the generation
  its Work was rendered from) and its controller has observed its own latest spec (`generation`
  == `observedGeneration` when the collected status carries `generation`, as Karmada's
  reflected status does); otherwise it stays as it was. A target cluster without a status item
  yet has not caught up (docs/differences.md).
- Job: active, succeeded and failed summed, the earliest startTime, the latest completionTime
  once every member completed, a Failed condition naming the members where it failed and a
  Complete condition once it completed everywhere; a finished Job's status is never rewritten.
Other kinds get no template status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from flotilla.api import jsonbytes, registry
from flotilla.api.conditions import TRUE, get_condition
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import TEMPLATE_GENERATION_ANNOTATION
from flotilla.rules.binding_builder import REPLICA_FIELDS, template_content
from services.executor.works import is_deleting, work_cluster

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"
APPLIED = "Applied"

# (apiVersion, kind) -> (summed fields, fields Kubernetes always prints; the rest are omitempty).
_SUMMED: dict[tuple[str, str], tuple[tuple[str, ...], frozenset[str]]] = {
    ("apps/v1", "Deployment"): (
        ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"), frozenset()),
    ("apps/v1", "StatefulSet"): (
        ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"),
        frozenset({"replicas"})),
    ("apps/v1", "ReplicaSet"): (
        ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"), frozenset({"replicas"})),
    ("apps/v1", "DaemonSet"): (
        ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
         "updatedNumberScheduled", "numberAvailable", "numberUnavailable"),
        frozenset({"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"})),
}
JOB = ("batch/v1", "Job")


def manifest_status(work: work_pb2.Work, resource: work_pb2.ObjectReference) -> work_pb2.ManifestStatus | None:
    """The Work's status of the template's object (matched by group, kind, namespace and name:
    a member may serve another version of the group)."""
    group, _ = registry.split_api_version(resource.api_version)
    wanted = (group, resource.kind, resource.namespace, resource.name)
    for status in work.status.manifest_statuses:
        found = status.identifier
        if (found.group, found.kind, found.namespace, found.name) == wanted:
            return status
    return None


def status_items(
    works: Iterable[work_pb2.Work],
    resource: work_pb2.ObjectReference,
    previous: Iterable[work_pb2.AggregatedStatusItem],
    now: datetime,
    shares: Mapping[str, int] | None = None,
) -> list[work_pb2.AggregatedStatusItem]:
    """One item per non-terminating Work, sorted by cluster.

    `settled` (Healthy at least once) and `creationTimestamp` (first status collected) carry
    over from the previous item of the same cluster.
    """
    before = {item.cluster_name: item for item in previous}
    works = list(works)
    stale = shares_not_dispatched(works, resource, shares) if shares is not None else set()
    items = []
    for work in works:
        cluster = work_cluster(work)
        if cluster is None or is_deleting(work):
            continue
        item = work_pb2.AggregatedStatusItem(cluster_name=cluster)
        applied = get_condition(work.status.conditions, APPLIED)
        if applied is None or applied.status != TRUE:
            item.applied = False
            item.applied_message = applied.message if applied is not None else ""
            item.health = UNKNOWN
        else:
            item.applied = True
            found = manifest_status(work, resource)
            if found is not None and found.status:
                item.status = found.status
            # Health only for what the member was given: this Work generation, and the binding's
            # current replica share.
            current = applied.observed_generation == work.metadata.generation and cluster not in stale
            item.health = found.health if found is not None and found.health and current else UNKNOWN
        old = before.get(cluster)
        item.settled = item.health == HEALTHY or (old is not None and old.settled)
        if old is not None and old.HasField("creation_timestamp"):
            item.creation_timestamp.CopyFrom(old.creation_timestamp)
        elif item.status:
            item.creation_timestamp.FromSeconds(int(now.timestamp()))
        items.append(item)
    return sorted(items, key=lambda i: i.cluster_name)


def dispatched_generations(works: Iterable[work_pb2.Work]) -> dict[str, int]:
    """cluster -> the template generation its Work was rendered from."""
    found = {}
    for work in works:
        cluster = work_cluster(work)
        value = work.metadata.annotations.get(TEMPLATE_GENERATION_ANNOTATION, "")
        if cluster is not None and value.isdigit():
            found[cluster] = int(value)
    return found


def _member_statuses(items: Iterable[work_pb2.AggregatedStatusItem]) -> list[tuple[str, dict[str, Any] | None]]:
    result = []
    for item in items:
        status = jsonbytes.loads(item.status) if item.status else None
        result.append((item.cluster_name, status if isinstance(status, dict) else None))
    return result


def _int(status: Mapping[str, Any], field: str) -> int:
    value = status.get(field, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _caught_up(status: Mapping[str, Any] | None, generation: int, dispatched: int | None) -> bool:
    if status is None:
        return False
    if status.get("resourceTemplateGeneration", dispatched) != generation:
        return False
    return "generation" not in status or status.get("generation") == status.get("observedGeneration")


def template_status(template: meta_pb2.Unstructured, items: Sequence[work_pb2.AggregatedStatusItem],
                    dispatched: Mapping[str, int], now: datetime,
                    targets: Iterable[str] = ()) -> dict[str, Any] | None:
    """The template's aggregated status, or None for a kind without status aggregation.

    `targets`: the clusters the binding places the template on; one with no item yet (its Work
    not made, or not yet seen) has not caught up either."""
    kind = (template.api_version, template.kind)
    old = template_content(template).get("status")
    old = old if isinstance(old, dict) else {}
    members = _member_statuses(items)
    if kind == JOB:
        return _job_status(old, members, now)
    if kind not in _SUMMED:
        return None
    fields, always = _SUMMED[kind]
    new = {k: v for k, v in old.items() if k not in fields and k != "observedGeneration"}
    for field in fields:
        total = sum(_int(status, field) for _, status in members if status is not None)
        if total or field in always:
            new[field] = total
    generation = template.metadata.generation
    reported = dict(members)
    if all(_caught_up(reported.get(cluster), generation, dispatched.get(cluster))
           for cluster in {*reported, *targets}):
        observed = generation
    else:
        observed = _int(old, "observedGeneration")
    if observed:
        new["observedGeneration"] = observed
    return new


def _finished(status: Mapping[str, Any]) -> bool:
    return any(isinstance(c, dict) and c.get("type") in ("Complete", "Failed") and c.get("status") == TRUE
               for c in status.get("conditions") or [])


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _job_status(old: dict[str, Any], members: list[tuple[str, dict[str, Any] | None]], now: datetime) -> dict[str, Any]:
    if _finished(old):
        return old
    new: dict[str, Any] = {}
    failed_in: list[str] = []
    complete = 0
    started: list[datetime] = []
    completed: list[datetime] = []
    for cluster, status in members:
        if status is None:
            continue
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict) and condition.get("status") == TRUE:
                if condition.get("type") == "Complete":
                    complete += 1
                elif condition.get("type") == "Failed":
                    failed_in.append(cluster)
        if (start := _time(status.get("startTime"))) is not None:
            started.append(start)
        if (end := _time(status.get("completionTime"))) is not None:
            completed.append(end)
        for field in ("active", "succeeded", "failed"):
            new[field] = new.get(field, 0) + _int(status, field)
    new = {k: v for k, v in new.items() if v}
    stamp = _rfc3339(now)
    conditions = []
    if failed_in:
        conditions.append({"type": "Failed", "status": TRUE, "reason": "JobFailed",
                           "message": f"Job executed failed in member clusters {','.join(failed_in)}",
                           "lastProbeTime": stamp, "lastTransitionTime": stamp})
    if members and complete == len(members):
        conditions.append({"type": "Complete", "status": TRUE, "reason": "Completed", "message": "Job completed",
                           "lastProbeTime": stamp, "lastTransitionTime": stamp})
    if conditions:
        new["conditions"] = conditions
    if started:
        new["startTime"] = _rfc3339(min(started))
    if members and len(completed) == len(members):
        new["completionTime"] = _rfc3339(max(completed))
    return new


def _rfc3339(moment: datetime) -> str:
    # metav1.Time: second precision, UTC.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shares_not_dispatched(works: Iterable[work_pb2.Work], resource: work_pb2.ObjectReference,
                          shares: Mapping[str, int]) -> set[str]:
    """Clusters whose Work still carries another replica count than the binding now gives them.

    Between the scheduler moving replicas (member2: 2 -> 3) and the binding controller
    rewriting the Work, the Work's status describes the old share; its health must not be
    read as the new share being healthy, or a graceful eviction would end too early.
    """
    field = REPLICA_FIELDS.get((resource.api_version, resource.kind))
    if field is None or not any(shares.values()):
        return set()
    stale = set()
    for work in works:
        cluster = work_cluster(work)
        if cluster is None or cluster not in shares:
            continue
        for raw in work.spec.workload.manifests:
            manifest = jsonbytes.loads(raw)
            meta = manifest.get("metadata") or {}
            if (manifest.get("kind"), meta.get("namespace", ""), meta.get("name")) != (
                    resource.kind, resource.namespace, resource.name):
                continue
            if (manifest.get("spec") or {}).get(field) != shares[cluster]:
                stale.add(cluster)
    return stale
