"""Whether, and when, a binding must leave a cluster with NoExecute taints (docs/karmada-rules.md §7).

Pure functions of the cluster (its taints and Ready condition), the binding's tolerations and
the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flotilla.api.bounds import clamp_seconds
from flotilla.api.clusters import cluster_ready
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    TAINT_CLUSTER_NOT_READY,
    TAINT_CLUSTER_UNREACHABLE,
    toleration_tolerates_taint,
)
from flotilla.api.v1 import cluster_pb2, meta_pb2

NOW = "now"
LATER = "later"
NEVER = "never"


@dataclass(frozen=True)
class Verdict:
    when: str  # now | later | never
    at: datetime | None = None  # for "later"
    untolerated: tuple[str, ...] = ()  # taint keys nothing tolerates

    @property
    def due(self) -> bool:
        return self.when == NOW


def assess(
    taints: Sequence[meta_pb2.Taint], tolerations: Sequence[meta_pb2.Toleration], now: datetime
) -> Verdict:
    no_execute = [t for t in taints if t.effect == EFFECT_NO_EXECUTE]
    if not no_execute:
        return Verdict(NEVER)
    untolerated = []
    triggers: list[datetime] = []
    for taint in no_execute:
        # Kubernetes records the first toleration that matches a taint as the one in use.
        used = next((tol for tol in tolerations if toleration_tolerates_taint(tol, taint)), None)
        if used is None:
            untolerated.append(taint.key)
            continue
        # As Karmada: only a taint with timeAdded starts a toleration's clock (admission stamps them all).
        if used.HasField("toleration_seconds") and taint.HasField("time_added"):
            added = taint.time_added.ToDatetime(tzinfo=UTC)
            # Clamped: a value stored before admission bounded it must not overflow the date.
            triggers.append(added + timedelta(seconds=clamp_seconds(max(used.toleration_seconds, 0))))
    if untolerated:
        return Verdict(NOW, untolerated=tuple(untolerated))
    if not triggers:
        return Verdict(NEVER)
    earliest = min(triggers)
    if earliest <= now:
        return Verdict(NOW)
    return Verdict(LATER, at=earliest)


# Taints that say the cluster is not Ready: on a cluster whose Ready is True they are stale,
# written before it recovered and not yet removed (docs/karmada-rules.md §4.2).
_READINESS_TAINTS = frozenset({TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE})


def current_taints(cluster: cluster_pb2.Cluster) -> list[meta_pb2.Taint]:
    """The cluster's taints, less the readiness taints a Ready cluster still carries.

    The status service turns the cluster Ready and the taint manager then removes those taints,
    in two writes that watchers may see in either order; an eviction decided in between would
    move workloads off a cluster that has just recovered (docs/differences.md, decision 11).
    """
    if not cluster_ready(cluster):
        return list(cluster.spec.taints)
    return [t for t in cluster.spec.taints if t.key not in _READINESS_TAINTS]


def needs_no_evicting(cluster: cluster_pb2.Cluster) -> bool:
    """Ready, and no NoExecute taint in force: whatever admitted it for eviction is over."""
    return cluster_ready(cluster) and not any(t.effect == EFFECT_NO_EXECUTE for t in current_taints(cluster))


def assess_cluster(cluster: cluster_pb2.Cluster, tolerations: Sequence[meta_pb2.Toleration],
                   now: datetime) -> Verdict:
    """`assess` on the cluster as it is now: its Ready condition, not only its taints."""
    return assess(current_taints(cluster), tolerations, now)
