"""The failover spans the services add besides their reconcile loops: taints, replicas ready (with
the RTO) and the executor's member apply / purge, each in the trace stamped on the object."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flotilla.api.conditions import FALSE, set_condition
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import RB_NAME_ANNOTATION, RB_NAMESPACE_ANNOTATION, TRACEPARENT_ANNOTATION
from flotilla.runtime.tracecontext import traceparent
from services.eviction import recovery
from services.executor import execution
from services.taint_manager import cluster_taints
from tests.tracing_support import recording_tracer

T = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemorySpanExporter, str, int]]:
    """The exporter, a traceparent to stamp, and its trace id."""
    tracer, exporter = recording_tracer()
    for module in (cluster_taints, recovery, execution):
        monkeypatch.setattr(module, "_tracer", tracer)
    root = tracer.start_span("cluster.unhealthy")
    root.end()
    exporter.clear()
    yield exporter, traceparent(root), root.get_span_context().trace_id


def attributes(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in exporter.get_finished_spans()]


def unready_cluster(stamp: str, *taints: tuple[str, str, datetime]) -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    if stamp:
        cluster.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
    set_condition(cluster.status.conditions, "Ready", FALSE, "ClusterNotReachable", "", T, 0)
    for key, effect, added in taints:
        taint = cluster.spec.taints.add(key=key, effect=effect)
        taint.time_added.FromDatetime(added.replace(tzinfo=None))
    return cluster


def test_each_taint_since_ready_left_true_gets_one_span(spans: tuple[InMemorySpanExporter, str, int]) -> None:
    exporter, stamp, trace_id = spans
    reconciler = cluster_taints.ClusterTaintReconciler(None, None, None, None, cluster_taints.TaintConfig())  # type: ignore[arg-type]
    old = ("user/maintenance", "NoSchedule", T - timedelta(hours=1))
    not_ready = ("cluster.karmada.io/not-ready", "NoSchedule", T)
    reconciler._trace_taints(unready_cluster("", old, not_ready))  # no trace stamped yet
    assert exporter.get_finished_spans() == ()
    reconciler._trace_taints(unready_cluster(stamp, old, not_ready))
    no_execute = ("cluster.karmada.io/not-ready", "NoExecute", T + timedelta(seconds=5))
    reconciler._trace_taints(unready_cluster(stamp, old, not_ready, no_execute))
    finished = exporter.get_finished_spans()
    assert [(s.attributes or {}).get("flotilla.reason") for s in finished] == [
        "cluster.karmada.io/not-ready:NoSchedule", "cluster.karmada.io/not-ready:NoExecute"]
    assert {s.context.trace_id for s in finished} == {trace_id}
    assert finished[1].start_time == int((T + timedelta(seconds=5)).timestamp() * 1e9)
    assert all((s.attributes or {}).get("flotilla.step") == "taint" for s in finished)


def test_replicas_ready_spans_eviction_to_healthy_with_the_rto(spans: tuple[InMemorySpanExporter, str, int]) -> None:
    exporter, stamp, trace_id = spans
    binding = work_pb2.ResourceBinding()
    binding.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
    record = work_pb2.FailoverRecord(from_cluster="member1", to_clusters=["member2"], reason="TaintUntolerated")
    record.time.FromDatetime(T.replace(tzinfo=None))
    record.recovered_time.FromDatetime((T + timedelta(seconds=4)).replace(tzinfo=None))
    recovery._trace_recovered(binding, "ResourceBinding:default/nginx", record, 4.0)
    (span,) = exporter.get_finished_spans()
    assert span.context.trace_id == trace_id
    assert ((span.end_time or 0) - (span.start_time or 0)) / 1e9 == 4.0
    assert dict(span.attributes or {}) == {
        "flotilla.step": "replicas-ready", "flotilla.cluster": "member2", "flotilla.binding": "default/nginx",
        "flotilla.binding.kind": "ResourceBinding", "flotilla.reason": "TaintUntolerated",
        "flotilla.rto_seconds": 4.0, "flotilla.evicted_from": "member1"}


@pytest.mark.parametrize("stamped", [True, False])
def test_member_apply_is_traced_only_for_a_stamped_work(spans: tuple[InMemorySpanExporter, str, int],
                                                        stamped: bool) -> None:
    exporter, stamp, _ = spans
    work = work_pb2.Work()
    work.metadata.namespace, work.metadata.name = "karmada-es-member2", "nginx-abc"
    work.metadata.annotations[RB_NAMESPACE_ANNOTATION] = "default"
    work.metadata.annotations[RB_NAME_ANNOTATION] = "nginx"
    if stamped:
        work.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
    with execution._failover_span(work, "work.apply", "apply", "member2") as span:
        assert (span is not None) == stamped
    assert attributes(exporter) == ([{
        "flotilla.step": "apply", "flotilla.cluster": "member2", "flotilla.binding": "default/nginx",
        "flotilla.binding.kind": "ResourceBinding", "flotilla.work": "karmada-es-member2/nginx-abc"}]
        if stamped else [])
