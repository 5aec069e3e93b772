"""A binding as the filter and score plugins see it (`BindingInfo`), for one affinity.

Apart from `core` so that a component which only asks whether the filters keep a cluster out
(the eviction service, `task_drop`) does not load the capacity estimator and what it needs.
"""

from __future__ import annotations

from datetime import datetime

from flotilla.api.bindings import Binding
from flotilla.api.v1 import policy_pb2
from flotilla.scheduler.placement import blocked_clusters, returning_clusters
from flotilla.scheduler.plugin_api import AffinityMatcher, BindingInfo


def binding_info(binding: Binding, placement: policy_pb2.Placement, now: datetime) -> BindingInfo:
    spec = binding.spec
    return BindingInfo(
        kind=binding.kind or type(binding).__name__,
        namespace=binding.metadata.namespace,
        name=binding.metadata.name,
        spec=spec,
        status=binding.status,
        placement=placement,
        resource=(spec.resource.api_version, spec.resource.kind),
        targets={t.name: t.replicas for t in spec.clusters},
        evicting=frozenset(task.from_cluster for task in spec.graceful_eviction_tasks),
        blocked=blocked_clusters(spec, now),
        now=now,
        returning=returning_clusters(spec, binding.status),
    )


def with_affinity(base: BindingInfo, affinity: AffinityMatcher | None,
                  overflow: tuple[AffinityMatcher, ...]) -> BindingInfo:
    return BindingInfo(
        kind=base.kind, namespace=base.namespace, name=base.name, spec=base.spec, status=base.status,
        placement=base.placement, resource=base.resource, targets=base.targets, evicting=base.evicting,
        blocked=base.blocked, now=base.now, affinity=affinity, overflow=overflow, returning=base.returning,
    )


def for_term(base: BindingInfo, term: policy_pb2.ClusterAffinityTerm, workload: bool) -> BindingInfo:
    """The binding under one clusterAffinities term; a workload may overflow into its overflow terms."""
    overflow = tuple(AffinityMatcher.of(o) for o in term.overflow_affinities) if workload else ()
    return with_affinity(base, AffinityMatcher.of(term), overflow)


def for_cluster_affinity(base: BindingInfo, placement: policy_pb2.Placement) -> BindingInfo:
    """The binding under clusterAffinity (every cluster, without one)."""
    affinity = AffinityMatcher.of(placement.cluster_affinity) if placement.HasField("cluster_affinity") else None
    return with_affinity(base, affinity, ())
