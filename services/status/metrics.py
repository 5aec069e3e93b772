"""The status service's metrics, Karmada's names under the `flotilla_` prefix."""

from __future__ import annotations

from prometheus_client import Gauge, Histogram

from flotilla.api.clusters import cluster_ready
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.manager import Manager
from flotilla.store.informer import Informer

CLUSTER_READY_STATE = Gauge("flotilla_cluster_ready_state", "State of the cluster (1 if ready, 0 otherwise)",
                            ["member_cluster"])
CLUSTER_SYNC_STATUS_DURATION = Histogram(
    "flotilla_cluster_sync_status_duration_seconds", "Duration in seconds for syncing the status of the cluster once",
    ["member_cluster"],
)
# Timed on the probe thread, so it is the member's answer and the network, not this service's load.
CLUSTER_PROBE_DURATION = Histogram(
    "flotilla_cluster_probe_duration_seconds", "Duration in seconds of one health probe of a Push member",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


def record_ready(event: WatchEvent[cluster_pb2.Cluster]) -> None:
    name = event.obj.metadata.name
    if event.type is EventType.DELETED:
        if name in _known:
            _known.discard(name)
            CLUSTER_READY_STATE.remove(name)
        return
    _known.add(name)
    CLUSTER_READY_STATE.labels(name).set(1 if cluster_ready(event.obj) else 0)


_known: set[str] = set()


def track_ready(manager: Manager, clusters: Informer[cluster_pb2.Cluster]) -> None:
    """Keep cluster_ready_state in step with every cluster's Ready condition (Push and Pull)."""
    manager.on_event(clusters, record_ready)
