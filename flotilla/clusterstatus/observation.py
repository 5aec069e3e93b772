"""What one probe says about a cluster's Ready condition (docs/karmada-rules.md §3 steps 2-3).

The status controller never produces Unknown: an unreachable Push cluster is
Ready=False/ClusterNotReachable.
"""

from __future__ import annotations

from dataclasses import dataclass

from flotilla.api.clusters import CLUSTER_READY
from flotilla.api.conditions import FALSE, TRUE
from flotilla.api.limits import truncate_message

READY = CLUSTER_READY


@dataclass(frozen=True)
class ReadyObservation:
    status: str
    reason: str
    message: str


NOT_REACHABLE = ReadyObservation(FALSE, "ClusterNotReachable", "cluster is not reachable")
NOT_READY = ReadyObservation(FALSE, "ClusterNotReady", "cluster is reachable but health endpoint responded without ok")
HEALTHY = ReadyObservation(TRUE, "ClusterReady", "cluster is healthy and ready to accept workloads")


def observe(online: bool, healthy: bool) -> ReadyObservation:
    if not online:
        return NOT_REACHABLE
    return HEALTHY if healthy else NOT_READY


def client_failure(error: str) -> ReadyObservation:
    """Ready=False for a cluster no client could be made for; the error, cut to 1 KiB, is the
    condition's message (and the Event's, when the cluster leaves Ready)."""
    return ReadyObservation(FALSE, "StatusCollectionFailed",
                            truncate_message(f"failed to create a ClusterClient: {error}"))
