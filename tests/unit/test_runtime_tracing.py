from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from flotilla.runtime.tracing import JsonLinesSpanExporter


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
