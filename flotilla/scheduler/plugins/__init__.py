"""The built-in plugins, in the order the framework runs them. The first failing filter is the reason
recorded for a cluster, and later filters are not run for it: ClusterAffinity rules out most of a large
fleet at once, and a cluster the workload is being evicted from says so before anything else about it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flotilla.scheduler.plugins.api_enablement import APIEnablement
from flotilla.scheduler.plugins.cluster_affinity import ClusterAffinity
from flotilla.scheduler.plugins.cluster_eviction import ClusterEviction
from flotilla.scheduler.plugins.cluster_locality import ClusterLocality
from flotilla.scheduler.plugins.spread_constraint import SpreadConstraint
from flotilla.scheduler.plugins.taint_toleration import TaintToleration

BUILTIN: dict[str, Callable[[], Any]] = {
    plugin.name: plugin
    for plugin in (ClusterAffinity, ClusterEviction, APIEnablement, TaintToleration, SpreadConstraint,
                   ClusterLocality)
}
