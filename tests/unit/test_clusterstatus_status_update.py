"""The status service writes a probe's decision only when it changes the status the informer
holds (issue 14: at 100 members probed every second, most probes change nothing)."""

from __future__ import annotations

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.observation import HEALTHY, NOT_REACHABLE
from flotilla.clusterstatus.prober import StatusUpdate


def test_changes_says_whether_apply_would_change_the_status_and_leaves_it_alone() -> None:
    clock = FakeClock()
    status = cluster_pb2.ClusterStatus()
    healthy = StatusUpdate(HEALTHY, None, clock.now())
    assert healthy.changes(status) and not status.conditions
    healthy.apply(status)
    before = status.SerializeToString(deterministic=True)
    assert not StatusUpdate(HEALTHY, None, clock.now()).changes(status)
    assert StatusUpdate(NOT_REACHABLE, None, clock.now()).changes(status)
    assert status.SerializeToString(deterministic=True) == before
