"""Condition lists behave like Kubernetes' meta.SetStatusCondition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flotilla.api import conditions
from flotilla.api.v1.cluster_pb2 import ClusterStatus

T0 = datetime(2026, 11, 22, 3, 13, 39, 750_000, tzinfo=UTC)


def test_new_condition_is_stamped_to_the_second() -> None:
    status = ClusterStatus()
    assert conditions.set_condition(status.conditions, "Ready", "True", "ClusterReady", "ok", T0, 3)
    ready = conditions.get_condition(status.conditions, "Ready")
    assert ready is not None
    assert (ready.status, ready.reason, ready.message, ready.observed_generation) == ("True", "ClusterReady", "ok", 3)
    assert ready.last_transition_time.seconds == int(T0.replace(microsecond=0).timestamp())
    assert ready.last_transition_time.nanos == 0


def test_same_status_keeps_transition_time() -> None:
    status = ClusterStatus()
    conditions.set_condition(status.conditions, "Ready", "False", "ClusterNotReachable", "down", T0)
    later = T0 + timedelta(minutes=5)
    assert not conditions.set_condition(status.conditions, "Ready", "False", "ClusterNotReachable", "down", later)
    assert conditions.set_condition(status.conditions, "Ready", "False", "ClusterNotReady", "sick", later)
    ready = status.conditions[0]
    assert ready.reason == "ClusterNotReady"
    assert ready.last_transition_time.seconds == int(T0.timestamp())


def test_status_change_moves_transition_time() -> None:
    status = ClusterStatus()
    conditions.set_condition(status.conditions, "Ready", "True", "ClusterReady", "ok", T0)
    later = T0 + timedelta(seconds=30)
    assert conditions.set_condition(status.conditions, "Ready", "Unknown", "ClusterStatusUnknown", "?", later)
    assert status.conditions[0].last_transition_time.seconds == int(later.timestamp())
    assert len(status.conditions) == 1


def test_naive_now_is_utc_and_queries() -> None:
    status = ClusterStatus()
    conditions.set_condition(status.conditions, "Ready", "True", "ClusterReady", "", datetime(2026, 1, 1))
    conditions.set_condition(status.conditions, "CompleteAPIEnablements", "False", "Partial", "", T0)
    assert status.conditions[0].last_transition_time.seconds == int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    assert conditions.is_true(status.conditions, "Ready")
    assert not conditions.is_true(status.conditions, "CompleteAPIEnablements")
    assert not conditions.is_true(status.conditions, "Missing")
    assert conditions.condition_status(status.conditions, "Missing") == ""
    assert conditions.get_condition(status.conditions, "Missing") is None
    assert conditions.remove_condition(status.conditions, "Ready")
    assert not conditions.remove_condition(status.conditions, "Ready")
    assert [c.type for c in status.conditions] == ["CompleteAPIEnablements"]


def test_observed_generation_change_counts() -> None:
    status = ClusterStatus()
    conditions.set_condition(status.conditions, "Ready", "True", "ClusterReady", "ok", T0, 1)
    assert conditions.set_condition(status.conditions, "Ready", "True", "ClusterReady", "ok", T0, 2)
    assert status.conditions[0].observed_generation == 2
