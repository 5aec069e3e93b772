"""Workload controllers: keep a workload's pods as its spec asks and report its status as
Kubernetes' controllers do.

Simplifications (also in sim/README.md): a Deployment owns its pods directly (no
ReplicaSet objects); a template change rolls out by creating every new pod at once and retiring
an old pod each time a new one is Ready (Recreate deletes the old pods first); StatefulSets and
DaemonSets replace one outdated pod at a time once all pods are Ready; minReadySeconds and
progress deadlines are not modelled; Jobs' pods never fail.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any, Protocol

from sim.conditions import set_condition
from sim.pods import is_ready, is_scheduled, is_terminated, pod_from_template, random_suffix
from sim.selectors import label_selector_matcher, labels_of

Obj = dict[str, Any]


class Host(Protocol):
    """What a controller may do in its cluster."""

    def now(self) -> str: ...
    def pods_of(self, owner: Obj) -> list[Obj]: ...
    def create_pod(self, pod: Obj) -> Obj: ...
    def delete_pod(self, pod: Obj) -> None: ...
    def nodes(self) -> list[Obj]: ...
    def set_status(self, obj: Obj, status: dict[str, Any]) -> None: ...


def template_hash(template: Any) -> str:
    """A short stable hash of a pod template (like pod-template-hash / controller-revision-hash)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(10):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


def _omit_zero(status: dict[str, Any], always: tuple[str, ...] = ()) -> dict[str, Any]:
    # Kubernetes' workload status fields are mostly `omitempty`: zero counts do not appear.
    return {k: v for k, v in status.items() if k in always or v not in (0, None, "", [])}


def _by_deletion_preference(pods: list[Obj]) -> list[Obj]:
    """Pods to remove first: unscheduled, then not ready, then the newest (as ReplicaSets do)."""
    return sorted(pods, key=lambda p: (is_scheduled(p), is_ready(p), _negated(p["metadata"]["creationTimestamp"]),
                                       _negated(p["metadata"]["name"])))


def _negated(text: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text)


def int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent field (maxUnavailable, minAvailable) against `total`."""
    if isinstance(value, str) and value.endswith("%"):
        exact = float(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


# -- Deployment ----------------------------------------------------------------------------------

def reconcile_deployment(host: Host, d: Obj) -> None:
    spec, name = d["spec"], d["metadata"]["name"]
    replicas = int(spec.get("replicas", 1))
    template = spec.get("template") or {}
    revision = template_hash(template)
    pods = host.pods_of(d)
    new = [p for p in pods if labels_of(p).get("pod-template-hash") == revision]
    old = [p for p in pods if p not in new]
    recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
    if recreate:
        for pod in old:
            host.delete_pod(pod)
        old = []
    for _ in range(replicas - len(new)):
        new.append(host.create_pod(pod_from_template(
            d, f"{name}-{revision}-{random_suffix()}", template, {"pod-template-hash": revision})))
    for pod in _by_deletion_preference(new)[:max(len(new) - replicas, 0)]:
        host.delete_pod(pod)
        new.remove(pod)
    keep_old = max(replicas - sum(1 for p in new if is_ready(p)), 0)
    for pod in _by_deletion_preference(old)[:max(len(old) - keep_old, 0)]:
        host.delete_pod(pod)
        old.remove(pod)
    host.set_status(d, deployment_status(d, new, old, revision, host.now()))


def max_unavailable(d: Obj) -> int:
    spec = d["spec"]
    replicas = int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") != "RollingUpdate" or replicas == 0:
        return 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = int_or_percent(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = int_or_percent(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    # Both zero is invalid; the deployment controller then allows one unavailable pod.
    unavailable = 1 if surge == 0 and unavailable == 0 else unavailable
    return min(unavailable, replicas)


def deployment_status(d: Obj, new: list[Obj], old: list[Obj], revision: str, now: str) -> dict[str, Any]:
    replicas = int(d["spec"].get("replicas", 1))
    pods = new + old
    ready = sum(1 for p in pods if is_ready(p))
    conditions = (d.get("status") or {}).get("conditions") or []
    if ready >= replicas - max_unavailable(d):
        conditions = set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                   "Deployment has minimum availability.", now, update_time=True)
    else:
        conditions = set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                                   "Deployment does not have minimum availability.", now, update_time=True)
    rs = f"{d['metadata']['name']}-{revision}"
    if len(new) == replicas and not old and ready >= replicas:
        conditions = set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                                   f'ReplicaSet "{rs}" has successfully progressed.', now, update_time=True)
    else:
        conditions = set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                                   f'ReplicaSet "{rs}" is progressing.', now, update_time=True)
    # Available first, then Progressing, as kubectl shows them.
    conditions = sorted(conditions, key=lambda c: {"Available": 0, "Progressing": 1}.get(c["type"], 2))
    status = _omit_zero({
        "observedGeneration": d["metadata"].get("generation", 1),
        "replicas": len(pods),
        "updatedReplicas": len(new),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": max(len(pods) - ready, replicas - ready, 0),
    })
    status["conditions"] = conditions
    return status


# -- ReplicaSet ------------------------------------------------------------------------------------

def reconcile_replicaset(host: Host, rs: Obj) -> None:
    spec, name = rs["spec"], rs["metadata"]["name"]
    replicas = int(spec.get("replicas", 1))
    pods = host.pods_of(rs)
    for _ in range(replicas - len(pods)):
        pods.append(host.create_pod(pod_from_template(rs, f"{name}-{random_suffix()}", spec.get("template") or {}, {})))
    for pod in _by_deletion_preference(pods)[:max(len(pods) - replicas, 0)]:
        host.delete_pod(pod)
        pods.remove(pod)
    ready = sum(1 for p in pods if is_ready(p))
    match = label_selector_matcher(spec.get("selector"))
    host.set_status(rs, _omit_zero({
        "replicas": len(pods),
        "fullyLabeledReplicas": sum(1 for p in pods if match(labels_of(p))),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }, always=("replicas",)))


# -- StatefulSet -----------------------------------------------------------------------------------

def _ordinal(pod: Obj, name: str) -> int:
    match = re.fullmatch(re.escape(name) + r"-(\d+)", pod["metadata"]["name"])
    return int(match.group(1)) if match else -1


def reconcile_statefulset(host: Host, sts: Obj) -> None:
    spec, name = sts["spec"], sts["metadata"]["name"]
    replicas = int(spec.get("replicas", 1))
    template = spec.get("template") or {}
    revision = f"{name}-{template_hash(template)}"
    pods = {_ordinal(p, name): p for p in host.pods_of(sts)}
    for ordinal in sorted((o for o in pods if not 0 <= o < replicas), reverse=True):
        host.delete_pod(pods.pop(ordinal))
    parallel = spec.get("podManagementPolicy") == "Parallel"

    def create(ordinal: int) -> None:
        pod_name = f"{name}-{ordinal}"
        pods[ordinal] = host.create_pod(pod_from_template(sts, pod_name, template, {
            "controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal)}, {"hostname": pod_name}))

    for ordinal in range(replicas):
        if ordinal in pods:
            continue
        # OrderedReady: pod N+1 is only created once pods 0..N are Running and Ready.
        if not parallel and not all(is_ready(pods[o]) for o in range(ordinal) if o in pods):
            break
        create(ordinal)
    outdated = [o for o, p in pods.items() if labels_of(p).get("controller-revision-hash") != revision]
    if outdated and len(pods) == replicas and all(is_ready(p) for p in pods.values()):
        ordinal = max(outdated)  # rolling update goes from the highest ordinal down
        host.delete_pod(pods.pop(ordinal))
        create(ordinal)
    host.set_status(sts, statefulset_status(sts, list(pods.values()), revision))


def statefulset_status(sts: Obj, pods: list[Obj], revision: str) -> dict[str, Any]:
    replicas = int(sts["spec"].get("replicas", 1))
    previous = sts.get("status") or {}
    updated = sum(1 for p in pods if labels_of(p).get("controller-revision-hash") == revision)
    current_revision = previous.get("currentRevision") or revision
    if updated == replicas == len(pods):
        current_revision = revision
    ready = sum(1 for p in pods if is_ready(p))
    return _omit_zero({
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(pods),
        "readyReplicas": ready,
        "currentReplicas": sum(1 for p in pods if labels_of(p).get("controller-revision-hash") == current_revision),
        "updatedReplicas": updated,
        "availableReplicas": ready,
        "currentRevision": current_revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }, always=("replicas", "availableReplicas", "collisionCount"))


# -- DaemonSet -------------------------------------------------------------------------------------

def reconcile_daemonset(host: Host, ds: Obj) -> None:
    spec, name = ds["spec"], ds["metadata"]["name"]
    template = spec.get("template") or {}
    revision = template_hash(template)
    selector = (template.get("spec") or {}).get("nodeSelector") or {}
    wanted = [n["metadata"]["name"] for n in host.nodes()
              if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())]
    by_node: dict[str, Obj] = {}
    for pod in host.pods_of(ds):
        node = _pinned_node(pod)
        if node in wanted and node not in by_node:
            by_node[node] = pod
        else:
            host.delete_pod(pod)

    def create(node: str) -> None:
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        by_node[node] = host.create_pod(pod_from_template(
            ds, f"{name}-{random_suffix()}", template,
            {"controller-revision-hash": revision,
             "pod-template-generation": str(ds["metadata"].get("generation", 1))}, {"affinity": affinity}))

    for node in wanted:
        if node not in by_node:
            create(node)
    outdated = [n for n, p in by_node.items() if labels_of(p).get("controller-revision-hash") != revision]
    if outdated and all(is_ready(p) for p in by_node.values()):
        node = sorted(outdated)[0]
        host.delete_pod(by_node.pop(node))
        create(node)
    pods = list(by_node.values())
    scheduled = [p for p in pods if is_scheduled(p)]
    ready = sum(1 for p in pods if is_ready(p))
    host.set_status(ds, _omit_zero({
        "currentNumberScheduled": len(scheduled),
        "numberMisscheduled": 0,
        "desiredNumberScheduled": len(wanted),
        "numberReady": ready,
        "observedGeneration": ds["metadata"].get("generation", 1),
        "updatedNumberScheduled": sum(1 for p in scheduled if labels_of(p).get("controller-revision-hash") == revision),
        "numberAvailable": ready,
        "numberUnavailable": max(len(wanted) - ready, 0),
    }, always=("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")))


def _pinned_node(pod: Obj) -> str:
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for expr in term.get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("values"):
                return str(expr["values"][0])
    return ""


# -- Job -------------------------------------------------------------------------------------------

def reconcile_job(host: Host, job: Obj) -> None:
    spec, metadata = job["spec"], job["metadata"]
    completions = int(spec.get("completions") or 1)
    parallelism = int(spec.get("parallelism", 1))
    pods = host.pods_of(job)
    done = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    active = [p for p in pods if not is_terminated(p)]
    uid = metadata["uid"]
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": metadata["name"],
              "controller-uid": uid, "job-name": metadata["name"]}
    for _ in range(min(parallelism, completions - done) - len(active)):
        active.append(host.create_pod(pod_from_template(
            job, f"{metadata['name']}-{random_suffix()}", spec.get("template") or {}, labels)))
    previous = job.get("status") or {}
    now = host.now()
    status: dict[str, Any] = {
        "startTime": previous.get("startTime") or now,
        "active": len(active),
        "succeeded": done,
        "ready": sum(1 for p in active if is_ready(p)),
        "uncountedTerminatedPods": {},
    }
    conditions = previous.get("conditions") or []
    if done >= completions:
        conditions = set_condition(conditions, "Complete", "True", "CompletionsReached",
                                   "Reached expected number of succeeded pods", now, probe_time=True)
        status["completionTime"] = previous.get("completionTime") or now
    if conditions:
        status["conditions"] = conditions
    host.set_status(job, _omit_zero(status, always=("ready", "startTime", "uncountedTerminatedPods")))


# -- registry --------------------------------------------------------------------------------------

CONTROLLERS: dict[tuple[str, str], Callable[[Host, Obj], None]] = {
    ("apps", "Deployment"): reconcile_deployment,
    ("apps", "ReplicaSet"): reconcile_replicaset,
    ("apps", "StatefulSet"): reconcile_statefulset,
    ("apps", "DaemonSet"): reconcile_daemonset,
    ("batch", "Job"): reconcile_job,
}
