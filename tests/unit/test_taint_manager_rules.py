"""The taint manager's rules, as pure functions on a fake timeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2, work_pb2
from flotilla.rules.eviction_tasks import (
    EvictionOptions,
    StateNotCollected,
    graceful_evict_cluster,
    preserved_state,
    purge_mode_for,
    remove_cluster,
)
from services.taint_manager.condition_taints import apply_plan, plan_condition_taints
from services.taint_manager.protection import FULL, NORMAL, PARTIAL, EvictionProtection, ProtectionConfig
from services.taint_manager.taint_policy import apply_policies
from services.taint_manager.tolerations import LATER, NEVER, NOW, assess, assess_cluster

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TIMEOUT = timedelta(minutes=5)
NOT_READY, UNREACHABLE = "cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable"


def cluster(name: str = "member1", ready: str | None = "True", since: datetime = T0, region: str = "",
            taints: list[tuple[str, str]] = ()) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name = name
    c.spec.region = region
    for key, effect in taints:
        c.spec.taints.add(key=key, effect=effect)
    if ready is not None:
        set_condition(c.status.conditions, "Ready", ready, "R", "m", since)
    return c


def taint_ids(c: cluster_pb2.Cluster) -> set[tuple[str, str]]:
    return {(t.key, t.effect) for t in c.spec.taints}


def step(c: cluster_pb2.Cluster, now: datetime, auto: bool = True) -> datetime | None:
    plan = plan_condition_taints(c, now, TIMEOUT, auto)
    apply_plan(c.spec.taints, plan, now)
    return plan.recheck_at


# -- conditions -> taints ---------------------------------------------------------------------


def test_failing_cluster_timeline() -> None:
    c = cluster(ready="False", since=T0, taints=[("maintenance", "NoSchedule")])
    recheck = step(c, T0)
    assert taint_ids(c) == {("maintenance", "NoSchedule"), (NOT_READY, "NoSchedule")}
    assert recheck == T0 + TIMEOUT
    step(c, T0 + TIMEOUT - timedelta(seconds=1))
    assert (NOT_READY, "NoExecute") not in taint_ids(c)
    step(c, T0 + TIMEOUT)
    assert (NOT_READY, "NoExecute") in taint_ids(c)
    no_execute = next(t for t in c.spec.taints if t.effect == "NoExecute")
    assert codec.format_time(no_execute.time_added) == "2026-01-01T00:05:00Z"
    # Unknown swaps not-ready for unreachable.
    set_condition(c.status.conditions, "Ready", "Unknown", "R", "m", T0 + TIMEOUT)
    step(c, T0 + 2 * TIMEOUT)
    assert taint_ids(c) == {("maintenance", "NoSchedule"), (UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    # Recovery clears the controller's taints and leaves the user's.
    set_condition(c.status.conditions, "Ready", "True", "R", "m", T0 + 3 * TIMEOUT)
    step(c, T0 + 3 * TIMEOUT)
    assert taint_ids(c) == {("maintenance", "NoSchedule")}


def test_no_ready_condition_and_terminating() -> None:
    c = cluster(ready=None)
    step(c, T0)
    assert taint_ids(c) == {(NOT_READY, "NoSchedule")}
    c = cluster()
    c.metadata.deletion_timestamp.FromDatetime(T0.replace(tzinfo=None))
    step(c, T0)
    assert taint_ids(c) == {("cluster.karmada.io/terminating", "NoExecute")}


def test_failover_gate_off_adds_no_no_execute_and_keeps_manual_ones() -> None:
    c = cluster(ready="False", taints=[(NOT_READY, "NoExecute")])
    step(c, T0 + 10 * TIMEOUT, auto=False)
    assert taint_ids(c) == {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
    set_condition(c.status.conditions, "Ready", "True", "R", "m", T0 + 11 * TIMEOUT)
    step(c, T0 + 11 * TIMEOUT, auto=False)
    assert taint_ids(c) == {(NOT_READY, "NoExecute")}  # not the controller's to remove now


def test_existing_time_added_is_kept() -> None:
    c = cluster(ready="False")
    step(c, T0)
    first = c.spec.taints[0].time_added.seconds
    step(c, T0 + timedelta(seconds=30))
    assert c.spec.taints[0].time_added.seconds == first


# -- ClusterTaintPolicy -----------------------------------------------------------------------


def taint_policy(name: str, created: int, effect: str = "NoExecute") -> policy_pb2.ClusterTaintPolicy:
    return codec.parse_as(policy_pb2.ClusterTaintPolicy, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
        "metadata": {"name": name, "creationTimestamp": f"2026-01-01T00:00:0{created}Z"},
        "spec": {
            "addOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["False", "Unknown"]}],
            "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": [{"key": NOT_READY, "effect": effect}],
        },
    })


def test_taint_policy_adds_and_removes_by_condition() -> None:
    c = cluster(ready="False")
    assert apply_policies(c.spec.taints, c, [taint_policy("p", 1)], T0)
    assert taint_ids(c) == {(NOT_READY, "NoExecute")}
    assert not apply_policies(c.spec.taints, c, [taint_policy("p", 1)], T0)  # idempotent
    set_condition(c.status.conditions, "Ready", "True", "R", "m", T0)
    assert apply_policies(c.spec.taints, c, [taint_policy("p", 1)], T0)
    assert taint_ids(c) == set()


def test_missing_condition_type_never_matches() -> None:
    c = cluster(ready=None)
    assert not apply_policies(c.spec.taints, c, [taint_policy("p", 1)], T0)


# -- tolerations --------------------------------------------------------------------------------


def tol(key: str, seconds: int | None = None, effect: str = "NoExecute") -> meta_pb2.Toleration:
    t = meta_pb2.Toleration(key=key, operator="Exists", effect=effect)
    if seconds is not None:
        t.toleration_seconds = seconds
    return t


def no_execute(key: str, added: datetime = T0) -> meta_pb2.Taint:
    t = meta_pb2.Taint(key=key, effect="NoExecute")
    t.time_added.FromDatetime(added.replace(tzinfo=None))
    return t


@pytest.mark.parametrize(
    ("tolerations", "when", "at"),
    [
        ([], NOW, None),
        ([tol(UNREACHABLE, 600)], NOW, None),  # tolerates another taint only
        ([tol(NOT_READY, 600)], LATER, T0 + timedelta(seconds=600)),
        ([tol(NOT_READY)], NEVER, None),
        ([tol("", None)], NEVER, None),  # Exists with empty key tolerates everything
        ([tol(NOT_READY, 0)], NOW, None),
    ],
)
def test_toleration_timing(tolerations: list[meta_pb2.Toleration], when: str, at: datetime | None) -> None:
    verdict = assess([no_execute(NOT_READY)], tolerations, T0 + timedelta(seconds=1))
    assert (verdict.when, verdict.at) == (when, at)


def test_two_taints_shortest_toleration_wins() -> None:
    taints = [no_execute(NOT_READY), no_execute(UNREACHABLE, T0 + timedelta(seconds=100))]
    verdict = assess(taints, [tol(NOT_READY, 600), tol(UNREACHABLE, 30)], T0)
    assert (verdict.when, verdict.at) == (LATER, T0 + timedelta(seconds=130))
    assert assess(taints, [tol(NOT_READY, 600), tol(UNREACHABLE, 30)], T0 + timedelta(seconds=130)).due


def test_no_schedule_taints_never_evict() -> None:
    assert assess([meta_pb2.Taint(key=NOT_READY, effect="NoSchedule")], [], T0).when == NEVER


@pytest.mark.parametrize(
    ("ready", "taint", "when"),
    [
        # Ready arrived before the taint manager removed the taint it added while the cluster was down.
        ("True", NOT_READY, NEVER),
        ("True", UNREACHABLE, NEVER),
        ("False", NOT_READY, NOW),
        ("Unknown", UNREACHABLE, NOW),
        ("Unknown", NOT_READY, NOW),  # still unhealthy: the taint is only about to change key
        (None, NOT_READY, NOW),
        # A NoExecute taint of anyone else's evicts whatever the cluster's condition.
        ("True", "maintenance", NOW),
        ("True", "cluster.karmada.io/terminating", NOW),
    ],
)
def test_eviction_reads_the_clusters_ready_condition(ready: str | None, taint: str, when: str) -> None:
    c = cluster(ready=ready, since=T0 + timedelta(seconds=5))
    c.spec.taints.append(no_execute(taint))
    assert assess_cluster(c, [], T0 + timedelta(seconds=10)).when == when


# -- GracefulEvictCluster ---------------------------------------------------------------------


def binding(*targets: tuple[str, int], purge: str | None = None) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = "nginx-deployment", "default"
    for name, replicas in targets:
        b.spec.clusters.add(name=name, replicas=replicas)
    if purge is not None:
        b.spec.failover.cluster.purge_mode = purge
    return b


def test_graceful_evict_moves_cluster_to_a_task_once() -> None:
    b = binding(("member1", 1), ("member2", 2))
    options = EvictionOptions(purge_mode=purge_mode_for(b.spec, "Gracefully"))
    assert graceful_evict_cluster(b.spec, "member1", options)
    assert [(t.name, t.replicas) for t in b.spec.clusters] == [("member2", 2)]
    (task,) = b.spec.graceful_eviction_tasks
    assert (task.from_cluster, task.replicas, task.reason, task.producer, task.purge_mode) == (
        "member1", 1, "TaintUntolerated", "TaintManager", "Gracefully")
    assert not graceful_evict_cluster(b.spec, "member1", options)
    b.spec.clusters.add(name="member1", replicas=1)
    assert graceful_evict_cluster(b.spec, "member1", options)
    assert len(b.spec.graceful_eviction_tasks) == 1  # no duplicate task


def test_purge_mode_from_binding_or_flag_and_plain_removal() -> None:
    assert purge_mode_for(binding(purge="Directly").spec, "Gracefully") == "Directly"
    assert purge_mode_for(binding(purge="").spec, "Directly") == "Gracefully"
    assert purge_mode_for(binding().spec, "Directly") == "Directly"
    b = binding(("member1", 0))
    assert remove_cluster(b.spec, "member1") and not b.spec.graceful_eviction_tasks


def test_preserved_state_from_aggregated_status() -> None:
    b = binding(("member1", 1), purge="Directly")
    b.spec.failover.cluster.state_preservation.rules.add(
        alias_label_name="application.karmada.io/cluster-failover-jobid", json_path="{ .jobStatus.jobID }")
    with pytest.raises(StateNotCollected):
        preserved_state(b, "member1")
    b.status.aggregated_status.add(cluster_name="member1", status=b'{"jobStatus": {"jobID": "j-42"}}')
    assert preserved_state(b, "member1") == {"application.karmada.io/cluster-failover-jobid": "j-42"}


# -- mass-failure protection -------------------------------------------------------------------


async def test_protection_holds_everything_when_all_clusters_are_down() -> None:
    clock = FakeClock()
    protection = EvictionProtection(clock, ProtectionConfig(recovery_grace=5))
    protection.observe([cluster("a", "False"), cluster("b", "Unknown")])
    assert protection.everything_down and {r.state for r in protection.regions.values()} == {FULL}
    held = protection.admit("a")
    assert not held.admitted and held.retry_after is None
    # One cluster back: the others get the recovery grace to come back too, not an eviction.
    protection.observe([cluster("a", "False"), cluster("b", "True")])
    held = protection.admit("a")
    assert not held.admitted and held.retry_after == pytest.approx(5)
    assert "mass failure" in held.reason
    await clock.advance(5)
    assert protection.admit("a").admitted


async def test_a_partial_listing_is_no_recovery_from_a_mass_failure() -> None:
    protection = EvictionProtection(FakeClock(), ProtectionConfig(recovery_grace=5))
    protection.observe([cluster("a", "False")], complete=False)
    protection.observe([cluster("a", "False"), cluster("b", "True")], complete=False)
    assert protection.admit("a").admitted


async def test_partially_disrupted_region_evicts_slowly_and_others_freely() -> None:
    clock = FakeClock()
    protection = EvictionProtection(clock, ProtectionConfig(unhealthy_threshold=0.55, secondary_rate=0.01))
    protection.observe([
        cluster("eu1", "False", region="eu"), cluster("eu2", "False", region="eu"), cluster("eu3", region="eu"),
        cluster("us1", "False", region="us"), cluster("us2", region="us"), cluster("us3", region="us"),
    ])
    assert protection.regions["eu"].state == PARTIAL and protection.regions["us"].state == NORMAL
    assert protection.admit("us1").admitted
    assert protection.admit("eu1").admitted
    held = protection.admit("eu2")
    assert not held.admitted and held.retry_after == pytest.approx(100)
    assert protection.admit("eu1").admitted  # an admitted cluster stays admitted
    await clock.advance(100)
    assert protection.admit("eu2").admitted
