from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from flotilla.cli import trace as cli
from flotilla.cli.main import main
from flotilla.runtime.tracecontext import RTO_SECONDS, failover_attributes
from flotilla.runtime.tracing import JsonLinesSpanExporter

T0 = 1_700_000_000.0


def span(step: str, service: str, start: float, end: float, trace_id: str = "t1", *, cluster: str = "",
         binding: str = "", rto: float | None = None) -> cli.Span:
    attributes: dict[str, object] = dict(failover_attributes(step, cluster=cluster, binding=binding))
    if rto is not None:
        attributes[RTO_SECONDS] = rto
    return cli.Span(trace_id=trace_id, span_id=f"{step}{start}", parent_id="", name=step, service=service,
                    start=T0 + start, end=T0 + end, attributes=attributes)


FAILOVER = [
    span("detect", "status", 0.0, 2.0, cluster="member1"),
    span("taint", "taint_manager", 2.1, 2.1, cluster="member1"),
    span("toleration-wait", "taint_manager", 2.1, 2.1, cluster="member1", binding="default/a"),
    span("evict", "taint_manager", 2.2, 2.25, cluster="member1", binding="default/a"),
    span("evict", "taint_manager", 2.3, 2.4, cluster="member1", binding="default/b"),
    span("reschedule", "scheduler", 2.5, 2.6, binding="default/a"),
    span("reschedule", "scheduler", 2.6, 2.8, binding="default/b"),
    span("replicas-ready", "eviction", 2.2, 6.0, binding="default/a", rto=3.8),
    span("replicas-ready", "eviction", 2.3, 7.0, binding="default/b", rto=4.7),
]


@pytest.mark.parametrize(("spans", "expected"), [
    ([], []),
    (FAILOVER, [
        ("detect", "status", 0.0, 2.0, 1),
        ("taint", "taint_manager", 2.1, 0.0, 1),
        ("toleration-wait", "taint_manager", 2.1, 0.0, 1),
        ("evict", "taint_manager", 2.2, 0.2, 2),
        ("reschedule", "scheduler", 2.5, 0.3, 2),
        ("replicas-ready", "eviction", 2.2, 4.8, 2),
    ]),
    # No detect span (an application failover): the fault is the earliest span.
    ([span("evict", "eviction", 5.0, 5.5, binding="default/a"), span("reschedule", "scheduler", 6.0, 6.5)],
     [("evict", "eviction", 0.0, 0.5, 1), ("reschedule", "scheduler", 1.0, 0.5, 1)]),
])
def test_timeline_is_one_row_per_step_and_service(spans: list[cli.Span],
                                                  expected: list[tuple[str, str, float, float, int]]) -> None:
    rows = [(r.step, r.service, round(r.since, 3), round(r.duration, 3), r.spans) for r in cli.timeline(spans)]
    assert rows == expected


@pytest.mark.parametrize(("spans", "seconds", "bindings", "rto"), [
    (FAILOVER, 7.0, 2, {"default/a": 3.8, "default/b": 4.7}),
    # b evicted but not ready yet: no recovery time.
    (FAILOVER[:-1], None, 2, {"default/a": 3.8}),
    (FAILOVER[:5], None, 2, {}),
])
def test_recovery_waits_for_every_evicted_binding(spans: list[cli.Span], seconds: float | None, bindings: int,
                                                  rto: dict[str, float]) -> None:
    rec = cli.recovery(spans)
    assert (None if rec.seconds is None else round(rec.seconds, 3), rec.bindings, rec.rto) == (seconds, bindings, rto)


def test_failover_and_binding_traces_select_and_order() -> None:
    older = [span("detect", "status", -100.0, -99.0, "t0", cluster="member1"),
             span("evict", "taint_manager", -98.0, -98.0, "t0", cluster="member1", binding="default/c")]
    other = [span("detect", "status", 50.0, 51.0, "t2", cluster="member2")]
    spans = FAILOVER + older + other
    assert [t[0].trace_id for t in cli.failover_traces(spans, "member1")] == ["t0", "t1"]
    assert [t[0].trace_id for t in cli.failover_traces(spans, "member2")] == ["t2"]
    assert cli.failover_traces(spans, "member3") == []
    (only,) = cli.binding_traces(spans, "default/b")
    assert {s.attributes.get("flotilla.binding") for s in only} == {None, "default/b"}
    assert {s.step for s in only} == {"detect", "taint", "evict", "reschedule", "replicas-ready"}


def test_parse_span_reads_the_sdk_lines_and_skips_garbage(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider(resource=Resource.create({"service.name": "flotilla-status"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("cluster.unhealthy", attributes=failover_attributes("detect", cluster="m1")):
        pass
    with tracer.start_as_current_span("no-step"):
        pass
    provider.shutdown()
    with open(path, "a") as f:
        f.write("not json\n{}\n")
    (read,) = cli.read_spans(path)
    assert (read.step, read.service, read.clusters(), len(read.trace_id)) == ("detect", "status", ["m1"], 32)
    assert read.end >= read.start > 0


def test_trace_commands_print_a_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider(resource=Resource.create({"service.name": "flotilla-status"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("cluster.unhealthy", attributes=failover_attributes("detect", cluster="m1")):
        with tracer.start_as_current_span("binding.evict", attributes=failover_attributes(
                "evict", cluster="m1", binding="default/nginx")):
            pass
    provider.shutdown()
    assert main(["trace", "failover", "m1", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "STEP" in out and "detect" in out and "evict" in out and "recovery: not yet" in out
    assert main(["trace", "rb", "nginx", "-n", "default", "--last", "-o", "json", "--trace-file", str(path)]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in doc["steps"]] == ["detect", "evict"]
    assert doc["recovery_seconds"] is None and doc["bindings"] == 1
    assert main(["trace", "failover", "m2", "--data-dir", str(tmp_path)]) == 1
