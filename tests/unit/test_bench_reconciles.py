"""The failover benchmark's count of controller passes, read from a service's Prometheus text."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from flotilla.plane.benchmarks.resources import per_binding, queued_event_count, reconcile_counts


def test_each_work_queues_passes_are_read_from_its_histogram_count() -> None:
    registry = CollectorRegistry()
    work = Histogram("flotilla_workqueue_work_duration_seconds", "", ["name"], registry=registry)
    adds = Counter("flotilla_workqueue_adds_total", "", ["name"], registry=registry)
    for name, passes in (("binding", 3), ("work-status", 5)):
        for _ in range(passes):
            work.labels(name=name).observe(0.01)
            adds.labels(name=name).inc()
    assert reconcile_counts(generate_latest(registry).decode()) == {"binding": 3.0, "work-status": 5.0}


def test_per_binding_is_the_growth_of_what_was_read_both_times() -> None:
    before = {"executor/binding": 100.0, "executor/work-status": 10.0, "scheduler/rb": 7.0}
    after = {"executor/binding": 4100.0, "executor/work-status": 10.0, "eviction/graceful": 900.0,
             "scheduler/rb": 3007.0}
    # A service that could not be read before (restarted, say) is left out, not counted from zero.
    assert per_binding(before, after, 1000) == {"executor/binding": 4.0, "scheduler/rb": 3.0}


def test_the_events_a_service_has_not_written_yet_are_read_from_its_gauge() -> None:
    registry = CollectorRegistry()
    queued = Gauge("flotilla_events_queued", "", ["component"], registry=registry)
    queued.labels("executor").set(7)
    queued.labels("executor-agent").set(2)
    assert queued_event_count(generate_latest(registry).decode()) == 9
    assert queued_event_count(generate_latest(CollectorRegistry()).decode()) == 0
