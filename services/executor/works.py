"""Binding -> Works (docs/karmada-rules.md §10 and §12.3), as pure functions of the binding, its template and its Works.

- Expected clusters: spec.clusters, the clusters of every binding in requiredBy, and the
  fromCluster of each graceful eviction task whose purge mode is not Directly (its Work is kept
  until the task is dropped). A Work of the binding anywhere else is an orphan.
- While a Work still exists (even terminating) in a cluster with a Directly task, the binding's
  new Works wait: Directly means the old copy is gone before a new one starts. A Work deleted
  for a Directly task is marked so (DIRECTLY_PURGE_ANNOTATION) before its deletion: it keeps
  the new Works waiting until it is gone even once the task itself has been dropped (aged out
  while a dead cluster could not confirm the deletion).
- One Work per target cluster, `karmada-es-<cluster>/<work name>`, holding the template's
  manifest with server-owned metadata and status removed, the replica count revised to the
  cluster's share (Deployment, ReplicaSet, StatefulSet `spec.replicas`; Job `spec.parallelism`;
  a kind with a ResourceInterpreterCustomization `replicaRevision` script, its
  `ReviseReplica(template, share)`, which the caller awaits and passes in) once any cluster
  has replicas, a Divided Job's `spec.completions` split with Webster, and —
  with StatefulFailoverInjection — the preserved labels of a Directly-purged failover, those
  that are valid labels (flotilla/rules/preserved_labels.py: the others are left out and
  reported on the binding, StatePreservationFailed).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from google.protobuf.message import Message

from flotilla.api import codec, keys, registry
from flotilla.api.bindings import Binding, kind_of
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import (
    CONFLICT_RESOLUTION_ANNOTATION,
    CRB_NAME_ANNOTATION,
    CRB_PERMANENT_ID_LABEL,
    EXECUTION_FINALIZER,
    RB_NAME_ANNOTATION,
    RB_NAMESPACE_ANNOTATION,
    RB_PERMANENT_ID_LABEL,
    TEMPLATE_GENERATION_ANNOTATION,
    TRACEPARENT_ANNOTATION,
)
from flotilla.rules import preserved_labels as preserved_labels_rule
from flotilla.rules.aggregated_status import is_directly, target_clusters
from flotilla.rules.apportionment import webster
from flotilla.rules.binding_builder import REPLICA_FIELDS, template_content
from flotilla.rules.overrides import OVERRIDE_ANNOTATIONS, Overridden, OverrideError
from flotilla.store.base import meta_of

# On a Work deleted for a Directly task: the binding's new Works wait until it is gone.
DIRECTLY_PURGE_ANNOTATION = "flotilla.io/directly-purge"
DIVIDED = "Divided"

# Template metadata a member must not receive: the server's own fields (by omission below) and
# annotations that describe the template's history on the control plane, not the object.
_STRIPPED_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration",
    "resourcetemplate.karmada.io/managed-annotations",
    "resourcetemplate.karmada.io/managed-labels",
    TRACEPARENT_ANNOTATION,
})

def binding_id_label(binding: Binding) -> str:
    return kind_of(binding).permanent_id_label


def binding_id(binding: Binding) -> str:
    return binding.metadata.labels.get(binding_id_label(binding), "")


def binding_annotations(binding: Binding) -> dict[str, str]:
    """The annotations that point a Work (and its manifest) back at its binding."""
    if isinstance(binding, work_pb2.ResourceBinding):
        return {RB_NAMESPACE_ANNOTATION: binding.metadata.namespace, RB_NAME_ANNOTATION: binding.metadata.name}
    return {CRB_NAME_ANNOTATION: binding.metadata.name}


def work_binding_ids(work: work_pb2.Work) -> list[str]:
    labels = work.metadata.labels
    return [labels[label] for label in (RB_PERMANENT_ID_LABEL, CRB_PERMANENT_ID_LABEL) if labels.get(label)]


def work_cluster(work: work_pb2.Work) -> str | None:
    return keys.cluster_of_execution_namespace(work.metadata.namespace)


def is_deleting(obj: Message) -> bool:
    return meta_of(obj).HasField("deletion_timestamp")


def orphan_works(works: Iterable[work_pb2.Work], expected: set[str]) -> list[work_pb2.Work]:
    """Works in an execution namespace of a cluster not expected, not already being deleted."""
    return [w for w in works
            if (cluster := work_cluster(w)) is not None and cluster not in expected and not is_deleting(w)]


def directly_clusters(spec: work_pb2.ResourceBindingSpec) -> set[str]:
    """The clusters of the binding's Directly tasks."""
    return {t.from_cluster for t in spec.graceful_eviction_tasks if is_directly(t.purge_mode)}


def directly_purged(work: work_pb2.Work) -> bool:
    """A terminating Work deleted for a Directly task."""
    return is_deleting(work) and DIRECTLY_PURGE_ANNOTATION in work.metadata.annotations


def directly_blocking(spec: work_pb2.ResourceBindingSpec, works: Iterable[work_pb2.Work]) -> list[str]:
    """Clusters with a Directly task that still hold a Work of the binding (terminating or not),
    and clusters still holding a Work deleted for a Directly task since dropped."""
    directly = directly_clusters(spec)
    return sorted({c for w in works
                   if (c := work_cluster(w)) is not None and (c in directly or directly_purged(w))})


def preserved_labels(spec: work_pb2.ResourceBindingSpec, cluster: str) -> dict[str, str]:
    """§12.3: the preserved labels of the last eviction task, when it was Directly-purged, the
    binding has exactly one target cluster, and that cluster is not one the workload left."""
    if len(target_clusters(spec)) != 1 or not spec.graceful_eviction_tasks:
        return {}
    task = spec.graceful_eviction_tasks[-1]
    if not is_directly(task.purge_mode) or cluster in task.clusters_before_failover:
        return {}
    return dict(task.preserved_label_state)


def injected_labels(spec: work_pb2.ResourceBindingSpec, cluster: str) -> dict[str, str]:
    """The preserved labels a manifest for `cluster` carries: those that are valid labels. A
    value a member reported that is no label value would make every apply of the replacement
    fail; it is left out, and `state_preservation_report` says so."""
    valid, _ = preserved_labels_rule.split_labels(preserved_labels(spec, cluster))
    return valid


def state_preservation_report(spec: work_pb2.ResourceBindingSpec) -> tuple[str, str] | None:
    """The (reason, message) of the binding's StatePreservationFailed condition: the preserved
    labels `injected_labels` leaves out of its one target's manifest; None when it leaves none."""
    targets = target_clusters(spec)
    if len(targets) != 1:
        return None
    _, refused = preserved_labels_rule.split_labels(preserved_labels(spec, targets[0][0]))
    if not refused:
        return None
    return preserved_labels_rule.failure(spec, spec.graceful_eviction_tasks[-1], refused)


def is_divided(spec: work_pb2.ResourceBindingSpec) -> bool:
    # A replicaScheduling without a type is Divided (the CRD default); none at all is Duplicated.
    placement = spec.placement
    return placement.HasField("replica_scheduling") and (
        placement.replica_scheduling.replica_scheduling_type in ("", DIVIDED))


def job_completions(template: meta_pb2.Unstructured, spec: work_pb2.ResourceBindingSpec,
                    targets: list[tuple[str, int]]) -> dict[str, int]:
    """A Divided Job's completions per cluster, weighted by the clusters' replicas."""
    if (template.api_version, template.kind) != ("batch/v1", "Job") or not is_divided(spec):
        return {}
    completions = (template_content(template).get("spec") or {}).get("completions")
    if not isinstance(completions, int) or isinstance(completions, bool):
        return {}
    return dict(webster(completions, dict(targets), uid=template.metadata.uid))


def conflict_resolution(template: meta_pb2.Unstructured, spec: work_pb2.ResourceBindingSpec) -> str:
    """The template's own annotation wins when valid; otherwise the binding's; `abort` by default."""
    own = template.metadata.annotations.get(CONFLICT_RESOLUTION_ANNOTATION, "")
    if own in ("overwrite", "abort"):
        return own
    return "overwrite" if spec.conflict_resolution == "Overwrite" else "abort"


def manifest(binding: Binding, template: meta_pb2.Unstructured, replicas: int | None,
             completions: int | None, extra_labels: Mapping[str, str],
             revised: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The object a member receives: `replicas` and `completions` are its share (None: as in the template).

    `revised` is the template as the kind's ReviseReplica script gave it for this share: its
    content (everything but apiVersion, kind, metadata and status) replaces the template's; the
    metadata is still the template's, stripped and labelled as for any kind."""
    meta = template.metadata
    body = template_content(template)  # a fresh parse: this one is ours to change
    if revised is not None:
        body = {k: copy.deepcopy(v) for k, v in revised.items() if k not in ("apiVersion", "kind", "metadata")}
    body.pop("status", None)
    spec = body.get("spec")
    if isinstance(spec, dict):
        field = REPLICA_FIELDS.get((template.api_version, template.kind))
        if field is not None and replicas is not None and revised is None:
            spec[field] = replicas
        if completions is not None:
            spec["completions"] = completions
    labels = {**meta.labels, **extra_labels, binding_id_label(binding): binding_id(binding)}
    annotations = {k: v for k, v in meta.annotations.items() if k not in _STRIPPED_ANNOTATIONS}
    annotations.update(binding_annotations(binding))
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(meta.generation)
    annotations[CONFLICT_RESOLUTION_ANNOTATION] = conflict_resolution(template, binding.spec)
    metadata: dict[str, Any] = {"name": meta.name}
    if meta.namespace:
        metadata["namespace"] = meta.namespace
    metadata["labels"] = dict(sorted(labels.items()))
    metadata["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": template.api_version, "kind": template.kind, "metadata": metadata, **body}


def suspended(spec: work_pb2.ResourceBindingSpec, cluster: str) -> bool:
    suspension = spec.suspension
    return suspension.dispatching or cluster in suspension.dispatching_on_clusters.cluster_names


# (cluster, manifest) -> the manifest as that cluster receives it (flotilla/rules/overrides.py,
# fed with the executor's informers); raises OverrideError.
Overrider = Callable[[str, dict[str, Any]], Overridden]


def revised_shares(binding: Binding) -> list[int]:
    """The replica shares a kind's ReviseReplica script must answer for `build_works` (each
    once): those of the target clusters, or none when no cluster has replicas (nothing is
    revised then, as in Karmada)."""
    targets = target_clusters(binding.spec)
    if not any(replicas > 0 for _, replicas in targets):
        return []
    return sorted({replicas for _, replicas in targets})


def build_works(
    binding: Binding, template: meta_pb2.Unstructured, inject_preserved_labels: bool,
    overrider: Overrider | None = None, failed: list[tuple[str, str]] | None = None,
    revisions: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[work_pb2.Work]:
    """The Works the binding wants, one per target cluster, in target order.

    Each cluster's OverridePolicies and ClusterOverridePolicies apply last (after the replica
    share, as Karmada: override rules have the highest priority), and what applied is recorded
    on the Work. A failover's new Work is built here too, so the copy on the new cluster gets
    that cluster's overrides. A cluster whose overrides cannot be applied gets no Work this pass
    (its current Work, if any, is kept): it is appended to `failed` with the reason.

    `revisions`: for a kind with a ReviseReplica script, the revised template per share
    (`revised_shares`), every one of them: the caller builds no Works when one is missing."""
    spec = binding.spec
    targets = target_clusters(spec)
    # Karmada revises replicas only once the schedule gave some cluster replicas.
    revise = any(replicas > 0 for _, replicas in targets)
    completions = job_completions(template, spec, targets) if revise else {}
    meta = template.metadata
    work_annotations = binding_annotations(binding)
    work_annotations[TEMPLATE_GENERATION_ANNOTATION] = str(meta.generation)
    result = []
    for cluster, replicas in targets:
        extra = injected_labels(spec, cluster) if inject_preserved_labels else {}
        revised = revisions.get(replicas) if revisions is not None and revise else None
        body = manifest(binding, template, replicas if revise else None, completions.get(cluster), extra, revised)
        override_annotations: dict[str, str] = {}
        if overrider is not None:
            try:
                overridden = overrider(cluster, body)
            except OverrideError as e:
                if failed is not None:
                    failed.append((cluster, str(e)))
                continue
            body, override_annotations = overridden.manifest, overridden.annotations()
        work = work_pb2.Work(api_version=registry.WORK_API, kind=registry.WORK.kind)
        work.metadata.name = keys.work_name(meta.namespace, meta.name, template.kind)
        work.metadata.namespace = keys.execution_namespace(cluster)
        work.metadata.finalizers.append(EXECUTION_FINALIZER)
        work.metadata.labels[binding_id_label(binding)] = binding_id(binding)
        work.metadata.annotations.update(work_annotations)
        work.metadata.annotations.update(override_annotations)
        work.spec.workload.manifests.append(codec.raw_json(body))
        work.spec.suspend_dispatching = suspended(spec, cluster)
        work.spec.preserve_resources_on_deletion = spec.preserve_resources_on_deletion
        result.append(work)
    return result


def carries(current: work_pb2.Work, desired: work_pb2.Work) -> bool:
    """Whether `current` already says what `desired` does (`merge_work` would change nothing),
    found without copying either: most passes of the binding controller change no Work, and a
    Work is its whole manifest and status."""
    meta, wanted = current.metadata, desired.metadata
    return (current.spec == desired.spec
            and all(meta.labels.get(k) == v for k, v in wanted.labels.items())
            and all(meta.annotations.get(k) == v for k, v in wanted.annotations.items())
            and all(k in wanted.annotations for k in OVERRIDE_ANNOTATIONS if k in meta.annotations)
            and all(f in meta.finalizers for f in wanted.finalizers))


def merge_work(current: work_pb2.Work, desired: work_pb2.Work) -> work_pb2.Work:
    """`current` carrying `desired`'s spec, labels and annotations; whatever others put there
    (its own permanent id, the execution controller's annotations, status) is kept, but not
    applied-overrides annotations `desired` no longer has."""
    merged = work_pb2.Work()
    merged.CopyFrom(current)
    merged.metadata.labels.update(desired.metadata.labels)
    merged.metadata.annotations.update(desired.metadata.annotations)
    # Overrides no policy applies any more are no longer recorded.
    for k in OVERRIDE_ANNOTATIONS:
        if k not in desired.metadata.annotations:
            merged.metadata.annotations.pop(k, None)
    for finalizer in desired.metadata.finalizers:
        if finalizer not in merged.metadata.finalizers:
            merged.metadata.finalizers.append(finalizer)
    merged.spec.CopyFrom(desired.spec)
    return merged
