"""Pull-cluster health monitor (docs/karmada-rules.md §4.1) on a fake timeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.status.monitor import NEVER_UPDATED, STOPPED_POSTING, Grace, ReadySnapshot, assess

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GRACE = Grace(monitor=timedelta(seconds=40), startup=timedelta(seconds=60))
READY = ReadySnapshot("True", "ClusterReady", "ok", T0)


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_pull_cluster_whose_lease_stops_turns_unknown_after_grace() -> None:
    state = None
    for t in range(0, 41, 5):
        verdict, state = assess(ready=READY, created=T0, pull=True, lease_renew=s(t), state=state,
                                now=s(t), grace=GRACE)
        assert verdict is None
    # Renewals stop at t=40: nothing until t=80, then Unknown.
    verdict, state = assess(ready=READY, created=T0, pull=True, lease_renew=s(40), state=state, now=s(80),
                            grace=GRACE)
    assert verdict is None
    verdict, state = assess(ready=READY, created=T0, pull=True, lease_renew=s(40), state=state, now=s(81),
                            grace=GRACE)
    assert verdict == STOPPED_POSTING


def test_never_reported_uses_the_startup_grace_from_creation() -> None:
    verdict, state = assess(ready=None, created=T0, pull=True, lease_renew=None, state=None, now=s(60),
                            grace=GRACE)
    assert verdict is None
    verdict, _ = assess(ready=None, created=T0, pull=True, lease_renew=None, state=state, now=s(61), grace=GRACE)
    assert verdict == NEVER_UPDATED


def test_push_clusters_are_never_flipped() -> None:
    verdict, state = assess(ready=READY, created=T0, pull=False, lease_renew=None, state=None, now=s(0),
                            grace=GRACE)
    verdict, _ = assess(ready=READY, created=T0, pull=False, lease_renew=None, state=state, now=s(1000),
                        grace=GRACE)
    assert verdict is None


def test_already_unknown_is_left_alone() -> None:
    unknown = ReadySnapshot("Unknown", "ClusterStatusUnknown", "x", T0)
    _, state = assess(ready=unknown, created=T0, pull=True, lease_renew=None, state=None, now=s(0), grace=GRACE)
    verdict, _ = assess(ready=unknown, created=T0, pull=True, lease_renew=None, state=state, now=s(100), grace=GRACE)
    assert verdict is None


def test_a_changed_condition_restarts_the_grace() -> None:
    _, state = assess(ready=READY, created=T0, pull=True, lease_renew=None, state=None, now=s(0), grace=GRACE)
    changed = ReadySnapshot("False", "ClusterNotReady", "x", s(30))
    verdict, state = assess(ready=changed, created=T0, pull=True, lease_renew=None, state=state, now=s(30),
                            grace=GRACE)
    verdict, _ = assess(ready=changed, created=T0, pull=True, lease_renew=None, state=state, now=s(65), grace=GRACE)
    assert verdict is None
