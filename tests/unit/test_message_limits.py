"""A member's text is cut to 1 KiB wherever it is copied: truncate_message itself, every Event,
the Work's Applied condition and its span, the status service's probe history and Ready message.
A member answering with megabytes of message must cost etcd (whose requests stop at 1.5 MiB),
the Event queue and the traces no more than that."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.conditions import TRUE, get_condition, set_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.limits import MAX_MESSAGE_BYTES, truncate_message
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER, RB_NAME_ANNOTATION, TRACEPARENT_ANNOTATION
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.member import Health, MemberError
from flotilla.runtime.tracecontext import traceparent
from flotilla.store import MemoryStore
from flotilla.store.events import EventQueue, EventRecorder, events_for
from services.executor import execution
from services.executor.execution import APPLIED, ExecutionReconciler
from tests.background import in_background
from tests.tracing_support import recording_tracer
from tests.unit.cache_fake import Cache

HUGE = "the member says: " + "é" * (2 * 1024 * 1024)  # 4 MiB of UTF-8, two bytes a character


def fits(text: str) -> bool:
    return len(text.encode()) <= MAX_MESSAGE_BYTES


# -- truncate_message --------------------------------------------------------------------------


def test_a_short_message_is_left_as_it_is() -> None:
    assert truncate_message("HTTP 404: not found") == "HTTP 404: not found"
    assert truncate_message("é" * 512) == "é" * 512  # exactly 1 KiB


def test_a_long_message_is_cut_at_a_character_and_says_how_long_it_was() -> None:
    cut = truncate_message(HUGE)
    assert fits(cut) and len(cut.encode()) > MAX_MESSAGE_BYTES - 64
    assert cut.startswith("the member says: éé")
    assert cut.endswith(f"[truncated from {len(HUGE.encode())} bytes]")
    assert "\ufffd" not in cut  # no character cut in two
    assert truncate_message(cut) == cut  # idempotent: cutting twice changes nothing


def test_every_cut_is_valid_utf8_whatever_the_text() -> None:
    for text in ("a" * 5000, "€" * 5000, "😀" * 5000, "a\ud800b" * 2000, "x" * 1021 + "😀" * 3):
        cut = truncate_message(text)
        assert fits(cut)
        cut.encode()  # a lone surrogate would raise here, and in protobuf
    assert truncate_message("a\ud800b") == "a?b"
    assert fits(truncate_message("😀" * 10, 10)) and truncate_message("x" * 100, 5).endswith("bytes]")


# -- Events ------------------------------------------------------------------------------------


def involved() -> work_pb2.Work:
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.namespace, work.metadata.name, work.metadata.uid = "karmada-es-member1", "web", "u1"
    return work


async def test_an_event_recorder_writes_at_most_1_kib_of_message() -> None:
    store = MemoryStore()
    recorder = EventRecorder(store, "executor")
    await recorder.warning(involved(), "SyncFailed", HUGE)
    await recorder.warning(involved(), "SyncFailed", HUGE)  # a repeat folds into the same Event
    [event] = await events_for(store, involved())
    assert fits(event.message) and event.message.startswith("the member says") and event.count == 2


async def test_an_event_queue_cuts_the_message_before_it_waits() -> None:
    store = MemoryStore()
    queue = EventQueue(store, "status", qps=0)
    queue.emit(involved(), "Warning", "ClusterNotReady", HUGE)
    [(_, _, _, waiting)] = list(queue._queue._queue)  # type: ignore[attr-defined]  # asyncio.Queue's deque
    assert fits(waiting)
    async with in_background(queue.run()):
        await queue.drain()
    [event] = await events_for(store, involved())
    assert fits(event.message)


# -- the executor: the Applied condition and the apply span ------------------------------------


class RefusingMember:
    """A member whose every apply is refused with a 4 MiB message (as a client that did not cut
    it would report it)."""

    server = "https://member1.example:6443"

    async def get(self, *_: Any) -> dict[str, Any] | None:
        return None

    async def apply(self, body: dict[str, Any], resource_version: str | None = None) -> dict[str, Any]:
        raise MemberError(self.server, "apply Deployment default/web", f"HTTP 422: {HUGE}", status=422)


def ready_cluster() -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    set_condition(cluster.status.conditions, "Ready", TRUE, "ClusterReady", "", FakeClock().now())
    return cluster


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemorySpanExporter, str]]:
    tracer, exporter = recording_tracer()
    monkeypatch.setattr(execution, "_tracer", tracer)
    root = tracer.start_span("cluster.unhealthy")
    root.end()
    exporter.clear()
    yield exporter, traceparent(root)


async def test_a_refused_apply_reports_at_most_1_kib_in_the_condition_and_the_span(
        spans: tuple[InMemorySpanExporter, str]) -> None:
    exporter, stamp = spans
    store = MemoryStore()
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.namespace, work.metadata.name = execution_namespace("member1"), "web"
    work.metadata.finalizers.append(EXECUTION_FINALIZER)
    work.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
    work.metadata.annotations[RB_NAME_ANNOTATION] = "web"
    work.spec.workload.manifests.append(codec.raw_json(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "default", "name": "web"}}))
    stored = await store.create(work)

    async def connect(_: Any) -> Any:
        return RefusingMember()

    reconciler = ExecutionReconciler(store, FakeClock(), Cache([stored], synced=False),  # type: ignore[arg-type]
                                     Cache([ready_cluster()]), connect, lambda _: True)  # type: ignore[arg-type]
    with pytest.raises(MemberError):
        await reconciler.reconcile(f"{work.metadata.namespace}/web")
    written = await store.get(work_pb2.Work, work.metadata.namespace, "web")
    applied = get_condition(written.status.conditions, APPLIED)
    assert applied is not None and applied.reason == "AppliedFailed"
    assert fits(applied.message) and applied.message.startswith("Failed to apply all manifests (0/1)")
    [span] = exporter.get_finished_spans()
    assert span.status.description is not None and fits(span.status.description)


# -- the status service: the probe history (span events) and the Ready message -----------------


class Unreadable:
    """A member that answers its probe and whose collection fails with a 4 MiB error."""

    async def health(self) -> Health:
        return Health(online=True, healthy=True)

    async def version(self) -> str:
        raise MemberError("https://member1.example:6443", "get version", f"HTTP 500: {HUGE}", status=500)


async def test_the_probe_history_and_the_ready_message_hold_at_most_1_kib() -> None:
    clock = FakeClock()
    prober = ClusterProber(clock, Thresholds(success=timedelta(0), failure=timedelta(0)))

    async def refused() -> Any:
        raise ValueError(HUGE)  # building the client failed, quoting what it was given

    update = await prober.probe("member1", cluster_pb2.ClusterStatus(), refused)
    assert fits(update.ready.message) and update.ready.reason == "StatusCollectionFailed"
    status = cluster_pb2.ClusterStatus()
    set_condition(status.conditions, "Ready", TRUE, "ClusterReady", "", clock.now())

    async def unreadable() -> Any:
        return Unreadable()

    await prober.probe("member1", status, unreadable)
    history = prober.history("member1")
    assert len(history) == 2 and all(fits(record.error) for record in history)
    assert history[1].error.startswith("https://member1.example:6443: get version: HTTP 500")
