"""Which graceful eviction tasks stay: every rule of the assessment, one row each."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flotilla.api.v1 import work_pb2
from services.eviction.assessment import Drop, Placement, assess

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
TIMEOUT = timedelta(minutes=10)


def task(cluster: str = "member1", age: float | None = 60, **fields: Any) -> work_pb2.GracefulEvictionTask:
    t = work_pb2.GracefulEvictionTask(from_cluster=cluster, **{"purge_mode": "Gracefully", **fields})
    if age is not None:
        t.creation_timestamp.FromDatetime(NOW - timedelta(seconds=age))
    return t


def placed(*clusters: str, health: str | dict[str, str] = "Healthy", scheduled: bool = True) -> Placement:
    healths = health if isinstance(health, dict) else dict.fromkeys(clusters, health)
    return Placement(clusters=list(clusters), health=healths, scheduled=scheduled)


HEALTHY_ELSEWHERE = placed("member2")
STARTING_ELSEWHERE = placed("member2", health="Unknown")


@pytest.mark.parametrize(("name", "tasks", "placement", "kept", "dropped", "blocked", "deadline"), [
    ("new task is stamped and kept", [task(age=None)], STARTING_ELSEWHERE, ["member1"], [], [], 600),
    ("new task with a healthy placement still stamped, then dropped",
     [task(age=None)], HEALTHY_ELSEWHERE, [], [Drop.REPLACED], [], None),
    ("young task waits for the new placement", [task(age=60)], STARTING_ELSEWHERE, ["member1"], [], [], 540),
    ("unhealthy new placement keeps it", [task(age=60)], placed("member2", health="Unhealthy"),
     ["member1"], [], [], 540),
    ("a cluster without status keeps it", [task(age=60)], placed("member2", "member3", health={"member2": "Healthy"}),
     ["member1"], [], [], 540),
    ("every scheduled cluster healthy drops it", [task(age=60)], placed("member2", "member3"),
     [], [Drop.REPLACED], [], None),
    ("scheduler behind: healthy clusters do not count", [task(age=60)], placed("member2", scheduled=False),
     ["member1"], [], [], None),
    ("global timeout drops it", [task(age=601)], STARTING_ELSEWHERE, [], [Drop.TIMED_OUT], [], None),
    ("a moment before the deadline it stays", [task(age=599.999)], STARTING_ELSEWHERE, ["member1"], [], [],
     0.001),
    ("at the deadline it goes", [task(age=600)], STARTING_ELSEWHERE, [], [Drop.TIMED_OUT], [], None),
    ("its own grace period wins over the global timeout", [task(age=61, grace_period_seconds=60)],
     STARTING_ELSEWHERE, [], [Drop.TIMED_OUT], [], None),
    ("a long grace period outlives the global timeout", [task(age=900, grace_period_seconds=1800)],
     STARTING_ELSEWHERE, ["member1"], [], [], 900),
    ("suppressDeletion true keeps it forever", [task(age=10_000, suppress_deletion=True)], HEALTHY_ELSEWHERE,
     ["member1"], [], [], None),
    ("suppressDeletion false drops it at once", [task(age=1, suppress_deletion=False)], STARTING_ELSEWHERE,
     [], [Drop.DELETION_CONFIRMED], [], None),
    ("recovered cluster re-selected drops it", [task(age=60)], placed("member1", "member2", health="Unknown"),
     [], [Drop.CLUSTER_RESELECTED], [], None),
    # Never lose the only copy.
    ("nowhere to place: kept, reported, never aged out", [task(age=10_000)], placed(), ["member1"], [],
     ["member1"], None),
    ("scheduler not caught up: kept silently, never aged out", [task(age=10_000)], placed(scheduled=False),
     ["member1"], [], [], None),
    ("Directly with nowhere to place still ages out (its copy is already gone)",
     [task(age=601, purge_mode="Directly")], placed(), [], [Drop.TIMED_OUT], [], None),
    ("Directly waits for its deadline like any task", [task(age=60, purge_mode="Directly")], placed(),
     ["member1"], [], [], 540),
    # Never start the new copy without the preserved state.
    ("Directly while the new Works wait for the old copy's deletion: kept past its deadline",
     [task(age=601, purge_mode="Directly")], replace(STARTING_ELSEWHERE, purge_pending=True), ["member1"], [], [],
     None),
    ("Directly once the new Works exist: ages out as usual", [task(age=601, purge_mode="Directly")],
     STARTING_ELSEWHERE, [], [Drop.TIMED_OUT], [], None),
    ("Gracefully is not held by a Directly purge", [task(age=601)], replace(STARTING_ELSEWHERE, purge_pending=True),
     [], [Drop.TIMED_OUT], [], None),
    ("two tasks: the earlier deadline wakes it", [task("member1", age=60), task("member3", age=300)],
     STARTING_ELSEWHERE, ["member1", "member3"], [], [], 300),
    ("two tasks: one aged out, one kept", [task("member1", age=700), task("member3", age=300)],
     STARTING_ELSEWHERE, ["member3"], [Drop.TIMED_OUT], [], 300),
])
def test_assessment(name: str, tasks: list[work_pb2.GracefulEvictionTask], placement: Placement,
                    kept: list[str], dropped: list[Drop], blocked: list[str], deadline: float | None) -> None:
    verdict = assess(tasks, NOW, placement, TIMEOUT)
    assert [t.from_cluster for t in verdict.keep] == kept
    assert [d.why for d in verdict.dropped] == dropped
    assert list(verdict.blocked) == blocked
    assert (None if verdict.next_deadline is None else (verdict.next_deadline - NOW).total_seconds()) == deadline


def test_a_new_task_gets_now_as_its_creation_time_and_the_input_is_left_alone() -> None:
    new = task(age=None)
    verdict = assess([new], NOW, STARTING_ELSEWHERE, TIMEOUT)
    assert verdict.stamped and verdict.changed
    assert verdict.keep[0].creation_timestamp.ToDatetime(tzinfo=UTC) == NOW
    assert not new.HasField("creation_timestamp")


def test_nothing_to_do_changes_nothing() -> None:
    verdict = assess([task(age=60)], NOW, STARTING_ELSEWHERE, TIMEOUT)
    assert not verdict.changed


def test_placement_reads_the_executors_purge_pending_condition() -> None:
    from flotilla.api.conditions import set_condition
    from flotilla.api.wellknown import DIRECTLY_PURGE_PENDING_CONDITION
    from services.eviction.graceful import placement_of

    binding = work_pb2.ResourceBinding()
    assert not placement_of(binding).purge_pending
    set_condition(binding.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION, "True", "WorkDeleting", "", NOW, 1)
    assert placement_of(binding).purge_pending
