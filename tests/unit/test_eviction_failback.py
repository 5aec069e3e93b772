"""Failback (services/eviction/failback.py) as tables: off by default, the stabilization window
(not before, exactly at), the fleet-wide limit, stale records; the edit itself, and what the
scheduler's need_schedule makes of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import APPLIED_PLACEMENT_ANNOTATION
from flotilla.scheduler.need_schedule import Trigger, applied_placement, need_schedule
from flotilla.scheduler.placement import reschedule_requested
from services.eviction.failback import Decision, Wait, decide, fail_back, settings_of

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
WINDOW = 600
DIVIDED = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}
DUPLICATED = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
              "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


def binding(clusters: dict[str, int], failback: dict[str, Any] | None = None, tasks: list[str] | None = None,
            replicas: int = 3, placement: dict[str, Any] | None = None) -> work_pb2.ResourceBinding:
    spec: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
        "replicas": replicas, "placement": placement or DIVIDED,
        "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()],
        "gracefulEvictionTasks": [{"fromCluster": c, "purgeMode": "Gracefully", "producer": "TaintManager",
                                   "reason": "TaintUntolerated"} for c in tasks or []],
    }
    if failback is not None:
        spec["failover"] = {"cluster": {"purgeMode": "Gracefully", "failback": failback}}
    obj = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                           "metadata": {"name": "web-deployment", "namespace": "default"}, "spec": spec})
    assert isinstance(obj, work_pb2.ResourceBinding)
    obj.spec.replica_requirements.resource_request["cpu"] = "100m"
    obj.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement(obj.spec.placement)
    return obj


def record(before: dict[str, int] | None = None, to: tuple[str, ...] = ("member2",), recovered: bool = True,
           failed_back: bool = False) -> work_pb2.FailoverRecord:
    r = work_pb2.FailoverRecord(from_cluster="member1", reason="TaintUntolerated", producer="TaintManager",
                                to_clusters=list(to))
    r.time.FromDatetime(T0)
    for name, replicas in sorted((before if before is not None else {"member1": 1, "member2": 2}).items()):
        r.clusters_before.add(name=name, replicas=replicas)
    if recovered:
        r.recovered_time.FromDatetime(T0 + timedelta(seconds=30))
    if failed_back:
        r.failed_back_time.FromDatetime(T0)
    return r


ON = {"enabled": True, "stabilizationWindowSeconds": WINDOW, "maxConcurrent": 1}
READY_AT = T0 + timedelta(minutes=5)
END = READY_AT + timedelta(seconds=WINDOW)
AWAY = {"member2": 3}

CASES: list[tuple[str, work_pb2.ResourceBinding, list[work_pb2.FailoverRecord], bool, datetime | None, datetime,
                  int, Decision]] = [
    # (case, binding, history, scheduled, member1 Ready since, now, others failing back, decision)
    ("off by default: no failback at all", binding(AWAY), [record()], True, READY_AT, END, 0,
     Decision(why=Wait.DISABLED)),
    ("failback present but not enabled", binding(AWAY, {"enabled": False}), [record()], True, READY_AT, END, 0,
     Decision(why=Wait.DISABLED)),
    ("a task still on the binding", binding(AWAY, ON, tasks=["member1"]), [record()], True, READY_AT, END, 0,
     Decision(why=Wait.BUSY)),
    ("the scheduler has not caught up", binding(AWAY, ON), [record()], False, READY_AT, END, 0,
     Decision(why=Wait.UNSCHEDULED)),
    ("no history", binding(AWAY, ON), [], True, READY_AT, END, 0, Decision(why=Wait.NOTHING)),
    ("already failed back", binding(AWAY, ON), [record(failed_back=True)], True, READY_AT, END, 0,
     Decision(why=Wait.NOTHING)),
    ("the failover has not recovered yet", binding(AWAY, ON), [record(recovered=False)], True, READY_AT, END, 0,
     Decision(why=Wait.STALE)),
    ("moved elsewhere since", binding({"member3": 3}, ON), [record()], True, READY_AT, END, 0,
     Decision(why=Wait.STALE)),
    ("scaled since: the placement before no longer adds up", binding({"member2": 5}, ON, replicas=5), [record()],
     True, READY_AT, END, 0, Decision(why=Wait.STALE)),
    ("recorded without the placement before", binding(AWAY, ON), [record(before={})], True, READY_AT, END, 0,
     Decision(why=Wait.STALE)),
    ("home not Ready", binding(AWAY, ON), [record()], True, None, END, 0, Decision(why=Wait.NOT_READY)),
    ("just Ready: wait for the whole window", binding(AWAY, ON), [record()], True, READY_AT, READY_AT, 0,
     Decision(why=Wait.WINDOW, wait_until=END)),
    ("one microsecond before the window ends", binding(AWAY, ON), [record()], True, READY_AT,
     END - timedelta(microseconds=1), 0, Decision(why=Wait.WINDOW, wait_until=END)),
    ("exactly at the window's end", binding(AWAY, ON), [record()], True, READY_AT, END, 0,
     Decision(record=record())),
    ("the default window is 600 s", binding(AWAY, {"enabled": True}), [record()], True, READY_AT,
     READY_AT + timedelta(seconds=599), 0, Decision(why=Wait.WINDOW, wait_until=END)),
    ("another binding fails back: at the limit of 1", binding(AWAY, ON), [record()], True, READY_AT, END, 1,
     Decision(why=Wait.AT_CAPACITY)),
    ("below a limit of 2", binding(AWAY, {**ON, "maxConcurrent": 2}), [record()], True, READY_AT, END, 1,
     Decision(record=record())),
    ("at a limit of 2", binding(AWAY, {**ON, "maxConcurrent": 2}), [record()], True, READY_AT, END, 2,
     Decision(why=Wait.AT_CAPACITY)),
    ("the newest open record counts", binding({"member3": 3}, ON),
     [record(), record(before={"member2": 3}, to=("member3",))], True, READY_AT, END, 0,
     Decision(record=record(before={"member2": 3}, to=("member3",)))),
]


@pytest.mark.parametrize(("case", "obj", "history", "scheduled", "ready", "now", "others", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_decide(case: str, obj: work_pb2.ResourceBinding, history: list[work_pb2.FailoverRecord], scheduled: bool,
                ready: datetime | None, now: datetime, others: int, expected: Decision) -> None:
    since = {"member1": ready, "member2": T0}
    assert decide(obj.spec, history, scheduled, since, now, others) == expected


def test_settings_default_when_enabled_only() -> None:
    settings = settings_of(binding(AWAY, {"enabled": True}).spec)
    assert settings is not None
    assert (settings.window, settings.max_concurrent) == (timedelta(seconds=600), 1)
    assert settings_of(binding(AWAY).spec) is None


def test_fail_back_moves_home_and_keeps_the_away_copy_in_a_graceful_task() -> None:
    obj = binding({"member2": 2, "member3": 1}, ON)
    leaving = fail_back(obj.spec, record(to=("member2", "member3")))
    assert leaving == ["member3"]
    assert [(t.name, t.replicas) for t in obj.spec.clusters] == [("member1", 1), ("member2", 2)]
    [task] = obj.spec.graceful_eviction_tasks
    assert (task.from_cluster, task.replicas, task.producer, task.reason, task.purge_mode) == (
        "member3", 1, "Failback", "Failback", "Gracefully")
    assert not task.HasField("creation_timestamp")


def scheduled_after_failback(placement: dict[str, Any], before: dict[str, int]) -> work_pb2.ResourceBinding:
    """A binding the scheduler placed on member2 after member1 failed, then failed back."""
    obj = binding(AWAY, ON, placement=placement)
    obj.status.last_scheduled_time.FromDatetime(T0)
    fail_back(obj.spec, record(before=before))
    return obj


def test_the_scheduler_keeps_a_divided_failback() -> None:
    """Replicas still add up: need_schedule triggers nothing, the scheduler only records the
    generation as observed. No rescheduleTriggeredAt, which would re-divide from scratch."""
    obj = scheduled_after_failback(DIVIDED, {"member1": 1, "member2": 2})
    assert need_schedule(obj, set()) is None
    assert not obj.spec.HasField("reschedule_triggered_at")
    assert not reschedule_requested(obj.spec, obj.status)


def test_a_duplicated_failback_is_rescheduled_as_every_change_is() -> None:
    obj = scheduled_after_failback(DUPLICATED, {"member1": 3})
    assert need_schedule(obj, set()) is Trigger.ALWAYS
    # While the Failback task lasts, ClusterEviction keeps the away cluster out of the candidates.
    assert [t.from_cluster for t in obj.spec.graceful_eviction_tasks] == ["member2"]
