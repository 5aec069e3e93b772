"""Spans recorded in memory, each as it ends, for tests to read back (shared by tests)."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer


def recording_provider(service: str | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A TracerProvider (of the service named `service`, if given) and the exporter holding every
    span its tracers end. Nothing to shut down: no exit handler, no export thread."""
    exporter = InMemorySpanExporter()
    resource = Resource.create({"service.name": service}) if service is not None else None
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def recording_tracer(name: str = "test") -> tuple[Tracer, InMemorySpanExporter]:
    """A tracer named `name` and the exporter holding every span it ends."""
    provider, exporter = recording_provider()
    return provider.get_tracer(name), exporter
