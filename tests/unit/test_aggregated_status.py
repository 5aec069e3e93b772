"""What a task drop carries of the executor's aggregation, and when aggregation waits for the
scheduler (flotilla/rules/aggregated_status.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import work_pb2
from flotilla.rules.aggregated_status import FULLY_APPLIED, awaits_reschedule, carry_aggregation
from flotilla.rules.scheduler_state import scheduler_decided
from flotilla.store.base import copy_of

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 26, 12, 5, tzinfo=UTC)


def tasked(items: dict[str, bool], judged_generation: int = 4, applied: str = "True",
           purge_mode: str = "Gracefully") -> work_pb2.ResourceBinding:
    """On member2, with a task for member1, at generation 4; `items`: cluster -> applied."""
    binding = work_pb2.ResourceBinding()
    binding.metadata.generation = 4
    binding.spec.clusters.add(name="member2", replicas=1)
    binding.spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode=purge_mode)
    for cluster, is_applied in items.items():
        binding.status.aggregated_status.add(cluster_name=cluster, applied=is_applied, health="Healthy")
    set_condition(binding.status.conditions, FULLY_APPLIED, applied, "x", "y", NOW, judged_generation)
    return binding


def dropped(before: work_pb2.ResourceBinding) -> work_pb2.ResourceBinding:
    """`before` without its task, at the next generation, as the store hands it to `status_change`."""
    after = copy_of(before)
    del after.spec.graceful_eviction_tasks[:]
    after.metadata.generation += 1
    return after


@pytest.mark.parametrize(("before", "carried", "clusters", "fully_applied"), [
    # The dropped cluster's item goes; FullyApplied judged again for the new generation.
    (tasked({"member1": True, "member2": True}), True, ["member2"], ("True", 5)),
    (tasked({"member1": True, "member2": False}, applied="False"), True, ["member2"], ("False", 5)),
    # The new cluster not reported yet: still not fully applied.
    (tasked({"member1": True}, applied="False"), True, [], ("False", 5)),
    # Aggregated for an older generation: what is there may be behind, the executor decides.
    (tasked({"member1": True, "member2": True}, judged_generation=3), False, ["member1", "member2"], ("True", 3)),
    # A Directly task's cluster was no longer expected: only the generation moves on.
    (tasked({"member2": True}, purge_mode="Directly"), True, ["member2"], ("True", 5)),
])
def test_what_a_task_drop_carries_of_the_aggregation(before: work_pb2.ResourceBinding, carried: bool,
                                                    clusters: list[str], fully_applied: tuple[str, int]) -> None:
    after = dropped(before)
    assert carry_aggregation(before, after, LATER) is carried
    assert [i.cluster_name for i in after.status.aggregated_status] == clusters
    condition = get_condition(after.status.conditions, FULLY_APPLIED)
    assert condition is not None and (condition.status, condition.observed_generation) == fully_applied


def test_a_status_kept_keeps_its_transition_time() -> None:
    before = tasked({"member1": True, "member2": True})
    after = dropped(before)
    carry_aggregation(before, after, LATER)
    condition = get_condition(after.status.conditions, FULLY_APPLIED)
    assert condition is not None and condition.last_transition_time.ToDatetime(tzinfo=UTC) == NOW


def evicted(generation: int = 3, observed: int = 2, tasks: bool = True, scheduler: str = "",
            suspended: bool = False, failed_for: int | None = None, claimed: bool = True) -> work_pb2.ResourceBinding:
    """A binding a policy claims, at `generation`, the scheduler's last decision at `observed`."""
    binding = work_pb2.ResourceBinding()
    if claimed:
        binding.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = "p-1"
    binding.metadata.generation = generation
    binding.status.scheduler_observed_generation = observed
    binding.spec.scheduler_name = scheduler
    binding.spec.suspension.scheduling = suspended
    if tasks:
        binding.spec.graceful_eviction_tasks.add(from_cluster="member1")
    if failed_for is not None:
        binding.status.conditions.add(type="Scheduled", status="False", reason="NoClusterFit",
                                      observed_generation=failed_for)
    return binding


@pytest.mark.parametrize(("binding", "decided", "waits"), [
    # Just evicted: the scheduler has yet to decide the new generation; aggregation waits.
    (evicted(), False, True),
    # The scheduler decided it (placed it, or found nothing fits for this generation).
    (evicted(observed=3), True, False),
    (evicted(failed_for=3), True, False),
    (evicted(failed_for=2), False, True),
    # No failover open: aggregation never waits (a scheduler that is down stops nothing else).
    (evicted(tasks=False), False, False),
    # Nothing may come to end the wait: another scheduler's binding, scheduling suspended, or
    # no policy claiming the binding (the scheduler leaves it alone).
    (evicted(scheduler="my-scheduler"), False, False),
    (evicted(scheduler="default-scheduler"), False, True),
    (evicted(suspended=True), False, False),
    (evicted(claimed=False), False, False),
])
def test_aggregation_waits_only_for_the_scheduler_of_an_open_failover(
        binding: work_pb2.ResourceBinding, decided: bool, waits: bool) -> None:
    assert scheduler_decided(binding) is decided
    assert awaits_reschedule(binding) is waits
