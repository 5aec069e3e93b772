"""Issue 14: dropping a graceful eviction task carries the scheduler's observation forward only
when the scheduler would make no decision on it (a Divided workload), or the same decision (the
task's cluster stays out for another reason): each case is checked against `core.schedule` on
the binding before and after the drop."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api.conditions import set_condition
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import APPLIED_PLACEMENT_ANNOTATION
from flotilla.scheduler import core
from flotilla.scheduler.capacity import ClusterCapacity, NoReservations
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.need_schedule import applied_placement
from flotilla.scheduler.plugin_api import ClusterInfo
from flotilla.scheduler.task_drop import Carry, carry_after_drop, record_carry
from flotilla.store.base import copy_of
from tests.scheduler_support import cluster
from tests.unit.test_scheduler_loop_memory import rb

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
FRAMEWORK = Framework.build("*", installed={})
TERMS = {"clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"]},
                               {"affinityName": "backup", "clusterNames": ["member2"]}],
         "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
BOTH = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
DIVIDED = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}


def member(name: str, taint: str | None = None, deleting: bool = False) -> Any:
    obj = cluster(name)
    if taint is not None:
        obj.spec.taints.add(key="cluster.karmada.io/not-ready", effect=taint)
    if deleting:
        obj.metadata.deletion_timestamp.FromDatetime(NOW.replace(tzinfo=None))
    return obj


def evicted(placement: dict[str, Any], observed: str = "", generation: int = 4, scheduled: int = 4,
            condition: str = "True", **spec: Any) -> work_pb2.ResourceBinding:
    """Evicted from member1 and placed on member2 by the scheduler at `scheduled`."""
    obj = rb("web", placement)
    obj.spec.clusters.add(name="member2", replicas=2)
    obj.spec.graceful_eviction_tasks.add(from_cluster="member1", reason="TaintUntolerated",
                                         producer="TaintManager", purge_mode="Gracefully", replicas=2)
    for name, value in spec.items():
        getattr(obj.spec, name).FromDatetime(value)
    obj.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement(obj.spec.placement)
    obj.metadata.generation = generation
    obj.status.scheduler_observed_generation = scheduled
    obj.status.scheduler_observing_affinity_name = observed
    set_condition(obj.status.conditions, "Scheduled", condition, "Success" if condition == "True" else "NoClusterFit",
                  core.SUCCESS_MESSAGE, NOW, scheduled)
    obj.status.last_scheduled_time.FromDatetime(NOW.replace(tzinfo=None))
    return obj


def dropped(binding: work_pb2.ResourceBinding) -> work_pb2.ResourceBinding:
    after = copy_of(binding)
    del after.spec.graceful_eviction_tasks[:]
    return after


CASES = [
    ("Duplicated, settled on a term member1 is not in", evicted(TERMS, "backup"), [member("member1")],
     Carry.DECISION),
    ("Duplicated, member1 in the affinity and schedulable again: it may come back", evicted(BOTH),
     [member("member1")], Carry.NOTHING),
    ("Duplicated, member1 still NoExecute-tainted", evicted(BOTH), [member("member1", "NoExecute")],
     Carry.DECISION),
    ("Duplicated, member1 NoSchedule-tainted", evicted(BOTH), [member("member1", "NoSchedule")], Carry.DECISION),
    ("Duplicated, member1 gone from the fleet", evicted(BOTH), [], Carry.DECISION),
    ("Duplicated, member1 being deleted", evicted(BOTH), [member("member1", deleting=True)], Carry.DECISION),
    ("Divided: no decision to make, whatever member1 is", evicted(DIVIDED), [member("member1")],
     Carry.GENERATION),
    ("the scheduler had not caught up", evicted(TERMS, "backup", scheduled=3), [member("member1")], Carry.NOTHING),
    ("the last decision failed", evicted(TERMS, "backup", condition="False"), [member("member1")], Carry.NOTHING),
    ("a reschedule was asked for since", evicted(TERMS, "backup", reschedule_triggered_at=NOW.replace(
        tzinfo=None, hour=13)), [member("member1")], Carry.NOTHING),
]


def lookup(clusters: list[Any]) -> Any:
    infos = {c.metadata.name: ClusterInfo.from_cluster(c) for c in clusters}
    return infos.get


@pytest.mark.parametrize(("binding", "fleet", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_what_a_task_drop_carries(binding: work_pb2.ResourceBinding, fleet: list[Any], expected: Carry) -> None:
    fleet = [*fleet, member("member2")]
    after = dropped(binding)
    assert carry_after_drop(binding, after, ["member1"], lookup(fleet), FRAMEWORK, NOW) is expected
    if expected is Carry.DECISION:
        # What the scheduler decides on the version after the drop: the placement it has.
        infos = [ClusterInfo.from_cluster(c) for c in fleet if not c.metadata.HasField("deletion_timestamp")]
        snapshot = core.Snapshot(clusters=tuple(sorted(infos, key=lambda i: i.name)),
                                 capacities={c.metadata.name: ClusterCapacity.from_cluster(c) for c in fleet},
                                 now=NOW, reservations=NoReservations())
        decision = core.schedule(after, snapshot, FRAMEWORK)
        assert decision.ok and decision.clusters == [("member2", 2)]


def test_a_target_being_deleted_leaves_the_decision_to_the_scheduler() -> None:
    binding = evicted(TERMS, "backup")
    fleet = lookup([member("member1"), member("member2", deleting=True)])
    assert carry_after_drop(binding, dropped(binding), ["member1"], fleet, FRAMEWORK, NOW) is Carry.NOTHING


def test_the_carry_is_what_the_scheduler_would_record() -> None:
    after = dropped(evicted(TERMS, "backup"))
    after.metadata.generation = 5
    assert record_carry(after, Carry.DECISION, NOW)
    assert after.status.scheduler_observed_generation == 5
    [scheduled] = after.status.conditions
    assert (scheduled.status, scheduled.reason, scheduled.observed_generation) == ("True", "Success", 5)
    divided = dropped(evicted(DIVIDED))
    divided.metadata.generation = 5
    assert record_carry(divided, Carry.GENERATION, NOW)
    assert divided.status.scheduler_observed_generation == 5
    assert divided.status.conditions[0].observed_generation == 4, "the scheduler's own pass leaves it too"
    assert not record_carry(dropped(evicted(BOTH)), Carry.NOTHING, NOW)
