"""A failover's steps never start before the step that caused them (`flotillactl trace`'s
out_of_order): the taint manager stamps its spans with the moment it wrote a taint, not the
taint's timeAdded, which keeps whole seconds and so can come up to a second before the detection
that caused it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.conditions import FALSE, TRUE, set_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_FINALIZER, TRACEPARENT_ANNOTATION
from flotilla.cli import trace as cli
from flotilla.clusterstatus.observation import NOT_REACHABLE
from flotilla.clusterstatus.prober import ClusterProber, StatusUpdate
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.runtime.tracecontext import (
    DETECTED_AT_ANNOTATION,
    FAILOVER_RTO_SECONDS,
    context_from,
    detected_at,
    failover_attributes,
    span_ns,
    traceparent,
)
from flotilla.store.memory import MemoryStore
from services.eviction.graceful import GracefulEvictionReconciler
from services.taint_manager import cluster_taints
from services.taint_manager.admissions import AdmissionRecords
from services.taint_manager.evictor import BindingEvictionReconciler
from services.taint_manager.taint_times import TaintTimes
from tests.factories import make_cluster
from tests.tracing_support import recording_provider, recording_tracer
from tests.unit.cache_fake import Cache
from tests.unit.test_cli_trace import FAILOVER, span
from tests.unit.test_eviction_graceful import binding

# The first failed probe, and three seconds later the one that published Ready=False: both off
# the whole second, as probe stamps are.
FIRST_FAILED = datetime(2026, 1, 1, 12, 0, 0, 700_000, tzinfo=UTC)
DETECTED = FIRST_FAILED + timedelta(seconds=3)


class Fixed:
    """An informer that holds what the test gives it."""

    def __init__(self, *objs: Any) -> None:
        self.objs = {o.metadata.name: o for o in objs}

    def get(self, key: str) -> Any:
        return self.objs.get(key)

    def list(self) -> list[Any]:
        return list(self.objs.values())

    def check_complete(self) -> None:
        pass


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider, exporter = recording_provider("flotilla-test")
    monkeypatch.setattr(cluster_taints, "_tracer", provider.get_tracer("taints"))
    yield provider, exporter


def as_cli(spans: tuple[ReadableSpan, ...]) -> list[cli.Span]:
    """The spans as `flotillactl trace` reads them from the span file."""
    parsed = [cli.parse_span(s.to_json(indent=None)) for s in spans]
    return [s for s in parsed if s is not None]


def test_out_of_order_names_a_step_that_starts_before_its_cause() -> None:
    assert cli.out_of_order(FAILOVER) == []
    late_detect = [span("detect", "status", 0.0, 3.0, cluster="member1"),
                   span("taint", "taint_manager", 2.2, 2.2, cluster="member1")]
    assert cli.out_of_order(late_detect) == ["taint starts at +2.200s, before detect ended (+3.000s)"]
    shown = cli.as_json(late_detect)
    assert shown["out_of_order"] == cli.out_of_order(late_detect)
    assert "out of order: taint starts at +2.200s" in cli.render(late_detect)
    # An application failover has no detect or taint: nothing to order them against.
    assert cli.out_of_order([span("evict", "eviction", 5.0, 5.5), span("reschedule", "scheduler", 6.0, 6.5)]) == []


async def test_taint_and_toleration_wait_start_when_the_taint_was_written(
        provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    tracer_provider, exporter = provider
    detect = tracer_provider.get_tracer("status").start_span(
        "cluster.unhealthy", start_time=span_ns(FIRST_FAILED),
        attributes=failover_attributes("detect", cluster="member1", reason="ClusterNotReachable"))
    detect.end(end_time=span_ns(DETECTED))

    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    cluster.metadata.finalizers.append(CLUSTER_FINALIZER)
    cluster.metadata.annotations[TRACEPARENT_ANNOTATION] = traceparent(detect)
    set_condition(cluster.status.conditions, "Ready", FALSE, "ClusterNotReachable", "", DETECTED)
    store = MemoryStore()
    await store.create(cluster)
    # The taint manager sees Ready=False 50 ms after it was published; with no eviction timeout it
    # writes both taints at once.
    clock = FakeClock(DETECTED + timedelta(milliseconds=50))
    times = TaintTimes()
    reconciler = cluster_taints.ClusterTaintReconciler(
        store, clock, Fixed(cluster), Fixed(),  # type: ignore[arg-type]
        cluster_taints.TaintConfig(eviction_timeout=timedelta(microseconds=1)), times=times)
    await reconciler.reconcile("member1")
    written = await store.get(registry.CLUSTER, "", "member1")
    assert {t.effect for t in written.spec.taints} == {"NoSchedule", "NoExecute"}
    assert all(t.time_added.nanos == 0 for t in written.spec.taints)  # whole seconds, as Karmada's

    # The eviction, five seconds later, starts its toleration wait at the NoExecute taint's write.
    evictor = BindingEvictionReconciler(store, clock, Fixed(written), {}, None,  # type: ignore[arg-type]
                                        AdmissionRecords(store), None,  # type: ignore[arg-type]
                                        tracer=tracer_provider.get_tracer("evictor"), taint_times=times)
    evictor._trace_wait(context_from(written.metadata.annotations), ["member1"], "default/nginx",
                        "ResourceBinding", clock.now() + timedelta(seconds=5))

    spans = as_cli(exporter.get_finished_spans())
    assert cli.out_of_order(spans) == []
    rows = {row.step: row for row in cli.timeline(spans)}
    assert rows["detect"].duration == pytest.approx(3.0)
    assert rows["taint"].since == pytest.approx(3.05)
    assert rows["toleration-wait"].since == pytest.approx(3.05)
    assert rows["toleration-wait"].duration == pytest.approx(5.0)


def test_a_taint_this_process_did_not_write_keeps_its_time_added() -> None:
    times = TaintTimes()
    taint = cluster_pb2.Cluster().spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoSchedule")
    taint.time_added.FromDatetime(datetime(2026, 1, 1, 12, 0, 3))
    assert times.added_ns("member1", taint) == taint.time_added.ToNanoseconds()
    times.record("member1", taint, datetime(2026, 1, 1, 12, 0, 3, 750_000, tzinfo=UTC))
    assert times.added_ns("member1", taint) == taint.time_added.ToNanoseconds() + 750_000_000
    # The same taint removed and added again a second later is another taint.
    taint.time_added.FromDatetime(datetime(2026, 1, 1, 12, 0, 4))
    assert times.added_ns("member1", taint) == taint.time_added.ToNanoseconds()
    times.keep_only("member1", [])
    assert json.dumps(times._added) == "{}"


def test_detected_at_is_the_status_services_stamp_of_this_transition() -> None:
    transition = DETECTED.replace(microsecond=0)
    stamped = {DETECTED_AT_ANNOTATION: DETECTED.isoformat()}
    assert detected_at(stamped, transition) == DETECTED
    # A stamp of an earlier failover, or none that reads: the transition, to its second.
    assert detected_at(stamped, transition + timedelta(minutes=5)) == transition + timedelta(minutes=5)
    assert detected_at({DETECTED_AT_ANNOTATION: "yesterday"}, transition) == transition
    assert detected_at({}, transition) == transition


async def test_the_status_service_stamps_when_it_published_not_ready(
        provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    tracer_provider, exporter = provider
    clock = FakeClock(DETECTED)
    store = MemoryStore()
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    set_condition(cluster.status.conditions, "Ready", TRUE, "ClusterReady", "", FIRST_FAILED - timedelta(hours=1))
    await store.create(cluster)
    prober = ClusterProber(clock, Thresholds(timedelta(seconds=3), timedelta(seconds=3)))
    publisher = StatusPublisher(store, prober, tracer=tracer_provider.get_tracer("status"))
    await publisher.publish("member1", StatusUpdate(NOT_REACHABLE, None, DETECTED))
    written = await store.get(registry.CLUSTER, "", "member1")
    assert written.metadata.annotations[DETECTED_AT_ANNOTATION] == DETECTED.isoformat()
    [detect] = as_cli(exporter.get_finished_spans())
    assert detect.end == pytest.approx(DETECTED.timestamp())


def test_the_failover_closes_from_where_the_status_service_saw_the_cluster_leave_ready() -> None:
    tracer, exporter = recording_tracer("eviction")
    root = tracer.start_span("cluster.unhealthy")
    root.end()
    clock = FakeClock(DETECTED + timedelta(seconds=10))
    down = make_cluster("member1")
    set_condition(down.status.conditions, "Ready", FALSE, "ClusterNotReachable", "down", DETECTED)
    down.metadata.annotations[DETECTED_AT_ANNOTATION] = DETECTED.isoformat()
    rb = binding({"member2": 3}, ["member1"])
    rb.metadata.annotations[TRACEPARENT_ANNOTATION] = traceparent(root)
    reconciler = GracefulEvictionReconciler(
        MemoryStore(), clock, {"ResourceBinding": Cache([rb])}, tracer=tracer,  # type: ignore[dict-item]
        clusters=Cache([down]))  # type: ignore[arg-type]
    exporter.clear()
    reconciler._close_failover_if_last(rb, rb.spec.graceful_eviction_tasks[0])
    [closed] = exporter.get_finished_spans()
    assert closed.start_time == span_ns(DETECTED)  # not the second lastTransitionTime keeps
    assert dict(closed.attributes or {})[FAILOVER_RTO_SECONDS] == 10.0
