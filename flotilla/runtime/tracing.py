"""OpenTelemetry tracing for every service.

The standard `OTEL_*` variables configure the SDK (service name, sampler,
OTLP endpoint); a JSON-lines file exporter lets `flotilla up` keep spans under
its data directory so traces are readable without a collector.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesSpanExporter(SpanExporter):
    """One finished span per line, appended to a file shared by all services."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        # indent=None: one line as the SDK writes it (it indents by default, and reparsing that to
        # compact it would cost a busy executor time of its own for every span).
        lines = "".join(s.to_json(indent=None) + "\n" for s in spans)
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            # One write call per batch keeps lines from different processes whole (O_APPEND).
            f.write(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class _FixedResource(Resource):
    """A Resource that gives its JSON as it was when made: the SDK writes a span's resource into
    every span's JSON by encoding it indented (with the pure-Python encoder) and parsing it back,
    which would be most of the cost of exporting a span. A provider's resource never changes."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self._json = resource.to_json(indent=None)

    def to_json(self, indent: int | None = 4) -> str:
        return self._json


def service_resource(service_name: str) -> Resource:
    return _FixedResource(Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", f"flotilla-{service_name}")}))


def setup_tracing(service_name: str, trace_file: str | None = None) -> TracerProvider:
    provider = TracerProvider(resource=service_resource(service_name))
    if trace_file:
        provider.add_span_processor(BatchSpanProcessor(JsonLinesSpanExporter(trace_file)))
    if _otlp_requested():
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument_grpc()
    return provider


def instrument_grpc() -> None:
    """A span for every call to Flotilla's own RPCs (grpc.aio servers and channels made from now on),
    with the caller's trace context in its metadata. etcd's RPCs and health checks are left out: they
    run all the time and would bury the failover spans."""
    from opentelemetry.instrumentation.grpc import GrpcAioInstrumentorClient, GrpcAioInstrumentorServer
    from opentelemetry.instrumentation.grpc.filters import service_prefix

    ours = service_prefix("flotilla.")
    instrumentors = (GrpcAioInstrumentorServer(filter_=ours), GrpcAioInstrumentorClient(filter_=ours))  # type: ignore[no-untyped-call]
    for instrumentor in instrumentors:
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()


def _otlp_requested() -> bool:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "")
    if exporter:
        return "otlp" in exporter.split(",")
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
