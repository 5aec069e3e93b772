from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from flotilla.runtime.tracing import JsonLinesSpanExporter, service_resource


def test_spans_are_written_as_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("detect") as parent, tracer.start_as_current_span("taint"):
        trace_id = parent.get_span_context().trace_id
    provider.shutdown()
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    assert [s["name"] for s in spans] == ["taint", "detect"]
    assert {s["context"]["trace_id"] for s in spans} == {f"0x{trace_id:032x}"}


def test_a_service_resource_is_written_as_the_sdk_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider(resource=service_resource("executor"))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    with provider.get_tracer("test").start_as_current_span("apply"):
        pass
    provider.shutdown()
    (span,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert span["resource"] == json.loads(Resource.create({"service.name": "flotilla-executor"}).to_json())
