"""The failover benchmark reports only what it observed: a stage's times and the total are null
unless every affected binding was seen through every stage; a task dropped before its binding's
new placement was Healthy is counted; the Events are settled only when every service was read
and had none queued; the write counts are complete only once the watch has read etcd's revision
at the end; and the fault is the one asked for."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import work_pb2
from flotilla.plane.benchmarks import failover
from flotilla.plane.benchmarks.failover import STAGES, Followed, Watcher, Writes, events_written, stage_report
from flotilla.plane.benchmarks.resources import total_queued

VICTIM, BACKUP = "member1", "member2"


def version(generation: int, clusters: list[str], tasked: bool,
            healthy_on: tuple[str, ...] = ()) -> work_pb2.ResourceBinding:
    """A binding as one write left it: placed on `clusters`, with or without the victim's task,
    the scheduler caught up, and the executor reporting `healthy_on` Healthy for this generation."""
    rb = work_pb2.ResourceBinding()
    rb.metadata.namespace, rb.metadata.name, rb.metadata.generation = "bench", "app-00000-deployment", generation
    for name in clusters:
        rb.spec.clusters.add(name=name, replicas=1)
    if tasked:
        rb.spec.graceful_eviction_tasks.add(from_cluster=VICTIM, reason="TaintUntolerated", producer="TaintManager")
    rb.status.scheduler_observed_generation = generation
    for name in healthy_on:
        rb.status.aggregated_status.add(cluster_name=name, applied=True, health="Healthy")
    if healthy_on:
        set_condition(rb.status.conditions, "FullyApplied", "True", "FullyAppliedSuccess", "", RealClock().now(),
                      observed_generation=generation)
    return rb


def through(*versions: work_pb2.ResourceBinding) -> Followed:
    followed = Followed(VICTIM)
    for i, rb in enumerate(versions, 1):
        followed.see(rb, 100.0 + i)
    return followed


def a_failover() -> Followed:
    return through(version(2, [BACKUP], tasked=True), version(2, [BACKUP], tasked=True, healthy_on=(BACKUP,)),
                   version(3, [BACKUP], tasked=False, healthy_on=(BACKUP,)))


def test_every_binding_through_every_stage_gives_every_figure() -> None:
    report = stage_report([a_failover(), a_failover()], taint=100.0)
    assert report["stages_complete"] is True
    assert report["stages_from_taint_s"]["evicted"] == {"p50": 1.0, "p99": 1.0, "max": 1.0, "reached": 2}
    assert report["stages_from_taint_s"]["healthy"]["max"] == 2.0
    assert report["total_s"] == 3.0
    assert report["dropped_before_healthy"] == 0


def test_a_binding_that_missed_a_stage_voids_every_figure() -> None:
    stuck = through(version(2, [BACKUP], tasked=True))  # evicted and rescheduled, never Healthy
    report = stage_report([a_failover(), stuck], taint=100.0)
    assert report["stages_complete"] is False
    assert report["total_s"] is None
    for stage in STAGES:
        assert report["stages_from_taint_s"][stage]["p50"] is None
        assert report["stages_from_taint_s"][stage]["max"] is None
    reached = {stage: report["stages_from_taint_s"][stage]["reached"] for stage in STAGES}
    assert reached == {"evicted": 2, "rescheduled": 2, "healthy": 1, "task_dropped": 1}


def test_no_taint_seen_voids_every_figure() -> None:
    report = stage_report([a_failover()], taint=None)
    assert report["stages_complete"] is False and report["total_s"] is None
    assert report["stages_from_taint_s"]["task_dropped"] == {"p50": None, "p99": None, "max": None, "reached": 1}


def test_a_task_dropped_before_the_new_placement_was_healthy_is_counted() -> None:
    early = through(version(2, [BACKUP], tasked=True), version(3, [BACKUP], tasked=False),
                    version(3, [BACKUP], tasked=False, healthy_on=(BACKUP,)))
    assert early.dropped_before_healthy and early.complete
    assert not a_failover().dropped_before_healthy
    # Healthy and the task dropped in the same version is not early.
    together = through(version(2, [BACKUP], tasked=True), version(3, [BACKUP], tasked=False, healthy_on=(BACKUP,)))
    assert not together.dropped_before_healthy
    report = stage_report([early, a_failover(), together], taint=100.0)
    assert report["dropped_before_healthy"] == 1
    # The end is the last stage any binding reached: here the early one's Healthy, after its drop.
    assert report["total_s"] == 3.0


def test_the_failover_is_done_only_when_every_binding_reached_every_stage() -> None:
    watcher = Watcher()
    dropped_early = through(version(2, [BACKUP], tasked=True), version(3, [BACKUP], tasked=False))
    watcher.start(VICTIM, {"a": dropped_early})
    assert "task_dropped" in dropped_early.at and not watcher.done
    dropped_early.see(version(3, [BACKUP], tasked=False, healthy_on=(BACKUP,)), 110.0)
    assert watcher.done


async def test_events_are_settled_only_when_every_service_was_read_with_none_queued() -> None:
    readings = iter([None, 5.0, None, 0.0])

    async def queued() -> float | None:
        return next(readings)

    settled = await events_written(queued, timeout=30, period=0.001)
    assert settled is not None
    assert next(readings, "drained") == "drained"

    async def unreadable() -> float | None:
        return None

    assert await events_written(unreadable, timeout=0.05, period=0.001) is None


def test_a_service_whose_metrics_cannot_be_read_has_not_settled() -> None:
    text = "# TYPE flotilla_events_queued gauge\nflotilla_events_queued{component=\"executor\"} 0.0\n"
    assert total_queued([text, text]) == 0
    assert total_queued([text, None]) is None
    assert total_queued([]) == 0


async def test_the_write_counts_are_complete_once_the_watch_read_the_revision_at_the_end() -> None:
    writes = Writes()
    writes.read(10)
    reaching = asyncio.create_task(writes.reach(12, timeout=30))
    await asyncio.sleep(0)
    writes.read(11)
    await asyncio.sleep(0)
    assert not reaching.done()
    writes.read(12)
    assert await reaching is True
    # A watch that stopped short, or one too slow, is reported incomplete rather than waited on.
    assert await Writes(revision=5).reach(6, timeout=0.01) is False
    assert await Writes(revision=5, closed=True).reach(6, timeout=30) is False


def parse(*argv: str) -> failover.Options:
    parser = argparse.ArgumentParser()
    failover.add_arguments(parser)
    return failover.options(parser.parse_args(list(argv)))


def test_the_fault_is_down_unless_unreachable_is_asked_for() -> None:
    assert parse().fault == "down"
    assert parse("--fault", "unreachable").fault == "unreachable"
    with pytest.raises(SystemExit):
        parse("--fault", "slow")
