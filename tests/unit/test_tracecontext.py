"""A traceparent stamped on objects is parsed once, however many passes read it."""

from __future__ import annotations

from opentelemetry import trace

from flotilla.api.wellknown import TRACEPARENT_ANNOTATION
from flotilla.runtime.tracecontext import context_from

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_the_same_traceparent_gives_the_same_context() -> None:
    first = context_from({TRACEPARENT_ANNOTATION: TRACEPARENT})
    again = context_from({TRACEPARENT_ANNOTATION: TRACEPARENT, "other": "annotation"})
    assert first is not None and again is first
    parent = trace.get_current_span(first).get_span_context()
    assert (parent.trace_id, parent.span_id, parent.is_remote) == (
        0x0af7651916cd43dd8448eb211c80319c, 0xb7ad6b7169203331, True)


def test_no_traceparent_no_context() -> None:
    assert context_from({}) is None
    assert context_from({TRACEPARENT_ANNOTATION: ""}) is None
