"""A Cluster's readiness, read from its Ready condition the one way most readers mean it."""

from __future__ import annotations

import pytest

from flotilla.api.clusters import cluster_not_ready_reason, cluster_ready
from flotilla.api.v1.cluster_pb2 import Cluster


def cluster(*conditions: tuple[str, str, str]) -> Cluster:
    c = Cluster()
    for type_, status, reason in conditions:
        c.status.conditions.add(type=type_, status=status, reason=reason)
    return c


@pytest.mark.parametrize(("obj", "ready", "why"), [
    (cluster(("Ready", "True", "ClusterReady")), True, None),
    (cluster(("Ready", "False", "ClusterNotReachable")), False, "Ready=False, ClusterNotReachable"),
    (cluster(("Ready", "False", "")), False, "Ready=False"),
    (cluster(("Ready", "Unknown", "ClusterStatusUnknown")), False, "Ready=Unknown, ClusterStatusUnknown"),
    (cluster(), False, "no Ready condition yet"),
    (cluster(("Healthy", "True", "")), False, "no Ready condition yet"),
    (cluster(("Healthy", "False", "Down"), ("Ready", "True", "ClusterReady")), True, None),
    (cluster(("Ready", "False", "ClusterNotReady"), ("Healthy", "True", "")), False, "Ready=False, ClusterNotReady"),
    # Like Karmada's meta.FindStatusCondition, the first Ready condition counts.
    (cluster(("Ready", "False", "ClusterNotReady"), ("Ready", "True", "ClusterReady")), False,
     "Ready=False, ClusterNotReady"),
], ids=["true", "false", "false-no-reason", "unknown", "missing", "other-type-only", "several-ready-last",
        "several-ready-first", "duplicate-first-counts"])
def test_a_clusters_readiness(obj: Cluster, ready: bool, why: str | None) -> None:
    assert cluster_ready(obj) is ready
    assert cluster_not_ready_reason(obj) == why
