"""Which status keys a Cluster event affects."""

from __future__ import annotations

from typing import Any

from flotilla.runtime.manager import WatchEvent


def cluster_name(event: WatchEvent[Any]) -> list[str]:
    return [event.obj.metadata.name]


def generation_changed(event: WatchEvent[Any]) -> bool:
    """New, gone, or its spec changed. Probing is otherwise self-driven by requeues; this lets a
    changed cluster be looked at at once."""
    return event.old is None or event.old.metadata.generation != event.obj.metadata.generation
