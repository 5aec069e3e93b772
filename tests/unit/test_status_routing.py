from __future__ import annotations

from typing import Any

import pytest

from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from services.status import routing


def cluster(generation: int) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name, c.metadata.generation = "m1", generation
    return c


@pytest.mark.parametrize(("event", "probe_now"), [
    (WatchEvent(EventType.ADDED, cluster(1)), True),
    (WatchEvent(EventType.MODIFIED, cluster(2), cluster(1)), True),
    (WatchEvent(EventType.MODIFIED, cluster(1), cluster(1)), False),  # a status write
    (WatchEvent(EventType.DELETED, cluster(1)), True),
])
def test_cluster_events(event: WatchEvent[Any], probe_now: bool) -> None:
    assert routing.cluster_name(event) == ["m1"]
    assert routing.generation_changed(event) is probe_now
