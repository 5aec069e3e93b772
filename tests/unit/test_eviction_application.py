"""Application failover as pure functions (services/eviction/application.py): the persisted
unhealthy-since timer (blip, sustained failure, Unknown in between, a restart mid-way),
preConditions, purge modes, state preservation and blockPredecessorSeconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.api import codec
from flotilla.api.v1 import work_pb2
from flotilla.rules.eviction_tasks import StateNotCollected
from services.eviction.application import Decision, GateDisabled, Gates, decide, evict, unhealthy_for

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
READY = {"member1": True, "member2": True, "member3": True}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def binding(application: dict[str, Any] | None = None, clusters: tuple[str, ...] = ("member1", "member2"),
            tasks: tuple[str, ...] = (), history: dict[str, float] | None = None) -> work_pb2.ResourceBinding:
    spec: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"},
        "replicas": 2,
        "clusters": [{"name": c, "replicas": 1} for c in clusters],
        "gracefulEvictionTasks": [{"fromCluster": c, "purgeMode": "Gracefully", "reason": "TaintUntolerated",
                                   "producer": "TaintManager"} for c in tasks],
        "activeEvictionHistory": [{"clusterName": c, "creationTimestamp": codec.format_time(_ts(at(s)))}
                                  for c, s in (history or {}).items()],
    }
    if application is not None:
        spec["failover"] = {"application": application}
    rb = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                          "metadata": {"name": "nginx-deployment", "namespace": "default"}, "spec": spec})
    assert isinstance(rb, work_pb2.ResourceBinding)
    return rb


def _ts(moment: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(moment)
    return ts


def policy(toleration: int = 300, purge: str = "Gracefully", **extra: Any) -> dict[str, Any]:
    return {"decisionConditions": {"tolerationSeconds": toleration}, "purgeMode": purge, **extra}


def observe(rb: work_pb2.ResourceBinding, health: dict[str, str], collected: float = -3600,
            settled: bool = True, status: dict[str, Any] | None = None) -> None:
    del rb.status.aggregated_status[:]
    for cluster, value in health.items():
        item = rb.status.aggregated_status.add(cluster_name=cluster, applied=True, health=value,
                                               settled=settled or value == "Healthy")
        item.creation_timestamp.FromDatetime(at(collected))
        if status is not None:
            item.status = json.dumps(status).encode()


def persist(rb: work_pb2.ResourceBinding, decision: Decision) -> None:
    """What the reconciler writes back (status only; the spec write is a separate pass)."""
    del rb.status.application_unhealthy_since[:]
    rb.status.application_unhealthy_since.extend(decision.records)


def step(rb: work_pb2.ResourceBinding, seconds: float, health: dict[str, str],
         ready: dict[str, bool] | None = None) -> Decision:
    observe(rb, health)
    decision = decide(rb, ready or READY, at(seconds))
    persist(rb, decision)
    return decision


def test_a_blip_shorter_than_the_toleration_never_evicts() -> None:
    rb = binding(policy(toleration=300))
    first = step(rb, 0, {"member1": "Unhealthy", "member2": "Healthy"})
    assert first.evict == () and first.records_changed and first.requeue_after == 300
    assert step(rb, 299, {"member1": "Unhealthy", "member2": "Healthy"}).evict == ()
    healed = step(rb, 299.5, {"member1": "Healthy", "member2": "Healthy"})
    assert healed.records == () and healed.records_changed and healed.requeue_after is None
    # Unhealthy again: a new episode, counted from zero.
    again = step(rb, 310, {"member1": "Unhealthy", "member2": "Healthy"})
    assert again.evict == () and again.requeue_after == 300


def test_a_sustained_failure_evicts_exactly_at_the_toleration() -> None:
    rb = binding(policy(toleration=300))
    step(rb, 0, {"member1": "Unhealthy", "member2": "Healthy"})
    waiting = step(rb, 299.999, {"member1": "Unhealthy", "member2": "Healthy"})
    assert waiting.evict == () and not waiting.records_changed
    assert waiting.requeue_after == pytest.approx(0.001)
    due = step(rb, 300, {"member1": "Unhealthy", "member2": "Healthy"})
    assert due.evict == ("member1",)


def test_the_default_toleration_is_300_seconds_and_zero_evicts_at_once() -> None:
    rb = binding({"purgeMode": "Directly", "decisionConditions": {}})
    assert step(rb, 0, {"member1": "Unhealthy"}).requeue_after == 300
    assert step(binding(policy(toleration=0)), 0, {"member1": "Unhealthy"}).evict == ("member1",)


def test_unknown_in_between_neither_resets_nor_advances_the_timer() -> None:
    """Karmada #7431: Unhealthy <-> Unknown never failed over there."""
    rb = binding(policy(toleration=300))
    step(rb, 0, {"member1": "Unhealthy"})
    paused = step(rb, 100, {"member1": "Unknown"})
    assert paused.requeue_after is None  # nothing to wake for while paused
    (record,) = paused.records
    assert record.HasField("unknown_since") and unhealthy_for(record, at(250)) == timedelta(seconds=100)
    resumed = step(rb, 200, {"member1": "Unhealthy"})
    assert resumed.requeue_after == 200  # 100 s counted, 200 to go
    step(rb, 300, {"member1": "Unknown"})
    again = step(rb, 400, {"member1": "Unhealthy"})
    assert again.evict == () and again.requeue_after == 100
    (record,) = again.records
    assert record.time.ToDatetime(tzinfo=UTC) == T0 and record.unknown_seconds == 200
    assert step(rb, 500, {"member1": "Unhealthy"}).evict == ("member1",)


def test_a_missing_status_pauses_and_unknown_alone_never_starts_the_timer() -> None:
    rb = binding(policy(toleration=300))
    assert step(rb, 0, {"member1": "Unknown"}).records == ()
    step(rb, 10, {"member1": "Unhealthy"})
    paused = step(rb, 20, {})
    assert paused.records[0].HasField("unknown_since")


def test_a_cluster_that_is_not_ready_is_cluster_failovers_job() -> None:
    rb = binding(policy(toleration=300))
    down = {**READY, "member1": False}
    assert step(rb, 0, {"member1": "Unhealthy"}, down).records == ()
    step(rb, 10, {"member1": "Unhealthy"})
    paused = step(rb, 110, {"member1": "Unhealthy"}, down)
    assert paused.evict == () and paused.requeue_after is None
    assert step(rb, 1000, {"member1": "Unhealthy"}, down).evict == ()
    back = step(rb, 1010, {"member1": "Unhealthy"})
    assert back.requeue_after == 200


def test_a_restart_mid_way_keeps_the_timer() -> None:
    """The record is all a new controller needs: it lives in the binding's status."""
    rb = binding(policy(toleration=300))
    step(rb, 0, {"member1": "Unhealthy"})
    restored = work_pb2.ResourceBinding()
    restored.ParseFromString(rb.SerializeToString())  # as read back from the store
    later = decide(restored, READY, at(250))
    assert later.evict == () and not later.records_changed and later.requeue_after == 50
    assert decide(restored, READY, at(300)).evict == ("member1",)


def test_records_of_clusters_no_longer_targeted_or_already_evicted_are_forgotten() -> None:
    rb = binding(policy(toleration=300), clusters=("member1", "member2", "member3"))
    step(rb, 0, {"member1": "Unhealthy", "member2": "Unhealthy", "member3": "Unhealthy"})
    assert [r.cluster_name for r in rb.status.application_unhealthy_since] == ["member1", "member2", "member3"]
    moved = binding(policy(toleration=300), clusters=("member2", "member3"), tasks=("member3",))
    moved.status.CopyFrom(rb.status)
    decision = decide(moved, READY, at(10))
    assert [r.cluster_name for r in decision.records] == ["member2"] and decision.records_changed


def test_without_application_failover_nothing_is_counted_and_history_goes() -> None:
    rb = binding(None, history={"member3": 0})
    observe(rb, {"member1": "Unhealthy"})
    decision = decide(rb, READY, at(10))
    assert decision.records == () and decision.evict == () and decision.history_changed
    assert decision.history == () and decision.spec_changed


def test_delay_seconds_counts_from_the_first_collected_status() -> None:
    rb = binding(policy(toleration=100, preConditions={"delaySeconds": 60}))
    observe(rb, {"member1": "Unhealthy"}, collected=0)
    early = decide(rb, READY, at(10))
    assert early.records == () and early.evict == () and early.requeue_after == 50
    persist(rb, early)
    started = decide(rb, READY, at(60))
    assert [r.cluster_name for r in started.records] == ["member1"] and started.requeue_after == 100
    # Healthy during the delay: nothing to wake for.
    observe(rb, {"member1": "Healthy"}, collected=0)
    assert decide(rb, READY, at(10)).requeue_after is None


def test_healthy_state_fails_over_only_an_application_that_was_healthy_once() -> None:
    rb = binding(policy(toleration=0, preConditions={"healthyState": "Healthy"}))
    observe(rb, {"member1": "Unhealthy"}, settled=False)
    never = decide(rb, READY, at(0))
    assert never.evict == () and never.records == () and never.requeue_after is None
    observe(rb, {"member1": "Unhealthy"}, settled=True)
    assert decide(rb, READY, at(0)).evict == ("member1",)
    # Without the precondition an application that never came up fails over too.
    rb = binding(policy(toleration=0))
    observe(rb, {"member1": "Unhealthy"}, settled=False)
    assert decide(rb, READY, at(0)).evict == ("member1",)


def evicted_task(application: dict[str, Any], gates: Gates | None = None,
                 status: dict[str, Any] | None = None) -> tuple[work_pb2.ResourceBindingSpec, Decision]:
    rb = binding(application)
    observe(rb, {"member1": "Unhealthy", "member2": "Healthy"}, status=status)
    decision = decide(rb, READY, at(0))
    assert decision.evict == ("member1",)
    return evict(rb, decision, at(0), gates or Gates()), decision


@pytest.mark.parametrize(("purge", "grace", "mode", "want_grace", "suppress"), [
    ("Gracefully", 120, "Gracefully", 120, None),
    ("Gracefully", None, "Gracefully", 600, None),
    ("Graciously", None, "Gracefully", 600, None),
    ("Directly", None, "Directly", None, None),
    ("Immediately", None, "Directly", None, None),
    ("Never", None, "Never", None, True),
])
def test_purge_modes_become_task_fields(purge: str, grace: int | None, mode: str, want_grace: int | None,
                                        suppress: bool | None) -> None:
    extra = {"gracePeriodSeconds": grace} if grace is not None else {}
    spec, _ = evicted_task(policy(toleration=0, purge=purge, **extra))
    assert [t.name for t in spec.clusters] == ["member2"]
    (task,) = spec.graceful_eviction_tasks
    assert (task.from_cluster, task.purge_mode, task.reason, task.producer, task.replicas) == (
        "member1", mode, "ApplicationFailure", "ApplicationFailover", 1)
    assert (task.grace_period_seconds if task.HasField("grace_period_seconds") else None) == want_grace
    assert (task.suppress_deletion if task.HasField("suppress_deletion") else None) == suppress
    assert not task.preserved_label_state and not task.clusters_before_failover
    # Stamped with the eviction's own time, and the placement it found, for the failover history.
    assert task.creation_timestamp.ToDatetime(tzinfo=UTC) == at(0)
    assert [(t.name, t.replicas) for t in task.placement_before] == [("member1", 1), ("member2", 1)]


@pytest.mark.parametrize("purge", ["Gracefully", "Never"])
def test_graceful_purge_modes_need_the_graceful_eviction_gate(purge: str) -> None:
    with pytest.raises(GateDisabled):
        evicted_task(policy(toleration=0, purge=purge), Gates(graceful_eviction=False))
    spec, _ = evicted_task(policy(toleration=0, purge="Directly"), Gates(graceful_eviction=False))
    assert spec.graceful_eviction_tasks[0].purge_mode == "Directly"


STATEFUL = policy(toleration=0, purge="Directly", statePreservation={"rules": [
    {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobID }"}]})


def test_state_is_preserved_with_the_gate_on() -> None:
    spec, _ = evicted_task(STATEFUL, Gates(state_preservation=True), status={"jobStatus": {"jobID": "j-42"}})
    (task,) = spec.graceful_eviction_tasks
    assert dict(task.preserved_label_state) == {"application.karmada.io/failover-jobid": "j-42"}
    assert list(task.clusters_before_failover) == ["member1", "member2"]
    off, _ = evicted_task(STATEFUL, Gates(state_preservation=False), status={"jobStatus": {"jobID": "j-42"}})
    assert not off.graceful_eviction_tasks[0].preserved_label_state
    assert not off.graceful_eviction_tasks[0].clusters_before_failover


def test_state_not_yet_collected_is_an_error_to_retry() -> None:
    with pytest.raises(StateNotCollected):
        evicted_task(STATEFUL, Gates(state_preservation=True))


def test_block_predecessor_seconds_records_history_and_prunes_it_exactly() -> None:
    spec, _ = evicted_task(policy(toleration=0, purge="Directly", blockPredecessorSeconds=900))
    assert [(h.cluster_name, h.creation_timestamp.ToDatetime(tzinfo=UTC)) for h in spec.active_eviction_history] == [
        ("member1", T0)]
    # Back on the binding: the next passes keep it, wake exactly at its end, then prune it.
    rb = binding(policy(toleration=300, purge="Directly", blockPredecessorSeconds=900), clusters=("member2",),
                 history={"member1": 0})
    observe(rb, {"member2": "Healthy"})
    kept = decide(rb, READY, at(899.5))
    assert not kept.history_changed and kept.requeue_after == 0.5 and not kept.spec_changed
    gone = decide(rb, READY, at(900))
    assert gone.history == () and gone.history_changed and gone.requeue_after is None
    assert list(evict(rb, gone, at(900), Gates()).active_eviction_history) == []


def test_without_block_predecessor_seconds_no_history_is_kept() -> None:
    spec, _ = evicted_task(policy(toleration=0, purge="Directly"))
    assert list(spec.active_eviction_history) == []


def test_a_second_eviction_from_the_same_cluster_replaces_its_history_entry() -> None:
    rb = binding(policy(toleration=0, purge="Directly", blockPredecessorSeconds=900), history={"member1": -100})
    observe(rb, {"member1": "Unhealthy"})
    decision = decide(rb, READY, at(0))
    spec = evict(rb, decision, at(0), Gates())
    assert [(h.cluster_name, h.creation_timestamp.ToDatetime(tzinfo=UTC)) for h in spec.active_eviction_history] == [
        ("member1", T0)]
