"""Which status keys a Cluster event affects."""

from __future__ import annotations

from flotilla.api.events import WatchEvent
from flotilla.api.v1 import cluster_pb2


def cluster_name(event: WatchEvent[cluster_pb2.Cluster]) -> list[str]:
    return [event.obj.metadata.name]


def generation_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """New, gone, or its spec changed. Probing is otherwise self-driven by requeues; this lets a
    changed cluster be looked at at once."""
    return event.old is None or event.old.metadata.generation != event.obj.metadata.generation
