"""The failover history rules (flotilla/rules/failover_history.py), as tables: a record's lifecycle
(new task → time → destinations → recovery → failed back), the cap at 10, recovery time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from flotilla.api.v1 import work_pb2
from flotilla.rules.failover_history import MAX_RECORDS, recovery_seconds, update_history

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(seconds=12.5)


def spec(clusters: dict[str, int], tasks: Sequence[tuple[str, int, datetime | None]] = (),
         producer: str = "TaintManager") -> work_pb2.ResourceBindingSpec:
    s = work_pb2.ResourceBindingSpec(replicas=3)
    for name, replicas in clusters.items():
        s.clusters.add(name=name, replicas=replicas)
    for cluster, replicas, created in tasks:
        task = s.graceful_eviction_tasks.add(from_cluster=cluster, reason="TaintUntolerated" if producer != "Failback"
                                             else "Failback", producer=producer, purge_mode="Gracefully")
        if replicas:
            task.replicas = replicas
        if created is not None:
            task.creation_timestamp.FromDatetime(created)
    return s


def record(from_cluster: str = "member1", time: datetime | None = T0, to: tuple[str, ...] = (),
           before: dict[str, int] | None = None, recovered: datetime | None = None,
           failed_back: datetime | None = None) -> work_pb2.FailoverRecord:
    r = work_pb2.FailoverRecord(from_cluster=from_cluster, reason="TaintUntolerated", producer="TaintManager",
                                to_clusters=list(to))
    if time is not None:
        r.time.FromDatetime(time)
    for name, replicas in sorted((before or {}).items()):
        r.clusters_before.add(name=name, replicas=replicas)
    if recovered is not None:
        r.recovered_time.FromDatetime(recovered)
    if failed_back is not None:
        r.failed_back_time.FromDatetime(failed_back)
    return r


BEFORE = {"member1": 1, "member2": 2}


def failback_on(s: work_pb2.ResourceBindingSpec) -> work_pb2.ResourceBindingSpec:
    s.failover.cluster.failback.enabled = True
    return s


CASES = [
    # (case, history, spec, health, scheduled, expected history, recovered count)
    ("a new unstamped task: a record without time, the placement before it",
     [], spec({"member2": 2}, [("member1", 1, None)]), {}, False,
     [record(time=None, before=BEFORE)], 0),
    ("a new stamped task: the record takes its time",
     [], spec({"member2": 2}, [("member1", 1, T0)]), {}, False,
     [record(before=BEFORE)], 0),
    ("the task is stamped later: the untimed record takes its time",
     [record(time=None, before=BEFORE)], spec({"member2": 2}, [("member1", 1, T0)]), {}, False,
     [record(before=BEFORE)], 0),
    ("already recorded: nothing changes",
     [record(before=BEFORE)], spec({"member2": 2}, [("member1", 1, T0)]), {}, False,
     [record(before=BEFORE)], 0),
    ("seen only after the scheduler moved: recorded without a placement before",
     [], spec({"member2": 3}, [("member1", 1, T0)]), {}, True,
     [record(to=("member2",))], 0),
    ("the scheduler caught up: destinations",
     [record(before=BEFORE)], spec({"member2": 3}, [("member1", 1, T0)]), {"member2": "Unknown"}, True,
     [record(before=BEFORE, to=("member2",))], 0),
    ("the scheduler caught up with no placement: no destinations yet",
     [record(before=BEFORE)], spec({}, [("member1", 1, T0)]), {}, True,
     [record(before=BEFORE)], 0),
    ("every destination Healthy: recovered now",
     [record(before=BEFORE, to=("member2",))], spec({"member2": 3}, [("member1", 1, T0)]), {"member2": "Healthy"},
     True, [record(before=BEFORE, to=("member2",), recovered=NOW)], 1),
    ("recovered after the task went",
     [record(before=BEFORE, to=("member2", "member3"))], spec({"member2": 2, "member3": 1}),
     {"member2": "Healthy", "member3": "Healthy"}, True,
     [record(before=BEFORE, to=("member2", "member3"), recovered=NOW)], 1),
    ("one destination not Healthy: not recovered",
     [record(before=BEFORE, to=("member2", "member3"))], spec({"member2": 2, "member3": 1}),
     {"member2": "Healthy", "member3": "Unhealthy"}, True,
     [record(before=BEFORE, to=("member2", "member3"))], 0),
    ("recovered once: never again",
     [record(before=BEFORE, to=("member2",), recovered=T0)], spec({"member2": 3}), {"member2": "Healthy"}, True,
     [record(before=BEFORE, to=("member2",), recovered=T0)], 0),
    ("the same cluster fails again: a second record",
     [record(before=BEFORE, to=("member2",), recovered=T0)], spec({"member2": 3}, [("member2", 3, NOW)]),
     {}, False,
     [record(before=BEFORE, to=("member2",), recovered=T0),
      record(from_cluster="member2", time=NOW, before={"member2": 3})], 0),
    ("a failback task is no failover; it marks the record it returns to",
     [record(before=BEFORE, to=("member2",), recovered=T0)],
     spec({"member1": 1, "member2": 2}, [("member2", 1, None)], producer="Failback"), {}, True,
     [record(before=BEFORE, to=("member2",), recovered=T0, failed_back=NOW)], 0),
    ("a failback task with the placement elsewhere marks nothing",
     [record(before=BEFORE, to=("member2",), recovered=T0)],
     spec({"member3": 3}, [("member2", 3, None)], producer="Failback"), {}, True,
     [record(before=BEFORE, to=("member2",), recovered=T0)], 0),
    ("failback enabled and back home with no task left: failed back",
     [record(before=BEFORE, to=("member2",), recovered=T0)], failback_on(spec(BEFORE)), {}, True,
     [record(before=BEFORE, to=("member2",), recovered=T0, failed_back=NOW)], 0),
    ("failback off and the same placement: not failed back",
     [record(before=BEFORE, to=("member2",), recovered=T0)], spec(BEFORE), {}, True,
     [record(before=BEFORE, to=("member2",), recovered=T0)], 0),
]


@pytest.mark.parametrize(("case", "history", "binding_spec", "health", "scheduled", "expected", "recovered"),
                         CASES, ids=[c[0] for c in CASES])
def test_history(case: str, history: list[work_pb2.FailoverRecord], binding_spec: work_pb2.ResourceBindingSpec,
                 health: dict[str, str], scheduled: bool, expected: list[work_pb2.FailoverRecord],
                 recovered: int) -> None:
    update = update_history(history, binding_spec, health, scheduled, NOW)
    assert list(update.history) == expected
    assert update.changed == (expected != history)
    assert len(update.recovered) == recovered


def test_the_last_ten_are_kept_oldest_dropped() -> None:
    history = [record(from_cluster=f"member{i}", time=T0 + timedelta(minutes=i), to=("x",), recovered=T0)
               for i in range(MAX_RECORDS)]
    update = update_history(history, spec({"x": 3}, [("member99", 3, NOW)]), {}, False, NOW)
    assert len(update.history) == MAX_RECORDS
    assert [r.from_cluster for r in update.history] == [f"member{i}" for i in range(1, MAX_RECORDS)] + ["member99"]


def test_recovery_time_is_recovered_minus_eviction() -> None:
    assert recovery_seconds(record(recovered=NOW)) == 12.5
    assert recovery_seconds(record()) is None
    assert recovery_seconds(record(time=None, recovered=NOW)) is None


def test_a_record_without_time_does_not_recover_until_stamped() -> None:
    history = [record(time=None, before=BEFORE, to=("member2",))]
    update = update_history(history, spec({"member2": 3}, [("member1", 1, None)]), {"member2": "Healthy"}, True, NOW)
    assert not update.changed and not update.recovered


def test_two_clusters_evicted_at_once_share_the_placement_before() -> None:
    update = update_history([], spec({"member3": 1}, [("member1", 1, T0), ("member2", 1, T0)]), {}, False, NOW)
    before = {"member1": 1, "member2": 1, "member3": 1}
    assert list(update.history) == [record(before=before), record(from_cluster="member2", before=before)]


def test_the_placement_recorded_on_the_task_wins_over_a_rescheduled_spec() -> None:
    """The scheduler may already have moved the replicas (member2:3) when the history first
    sees the task; the task's own placementBefore still says where they were."""
    s = spec({"member2": 3}, [("member1", 1, T0)])
    task = s.graceful_eviction_tasks[0]
    task.placement_before.add(name="member2", replicas=2)
    task.placement_before.add(name="member1", replicas=1)
    update = update_history([], s, {}, scheduled=True, now=NOW)
    [made] = update.history
    assert [(t.name, t.replicas) for t in made.clusters_before] == [("member1", 1), ("member2", 2)]
    assert made.time.ToDatetime(tzinfo=UTC) == T0
