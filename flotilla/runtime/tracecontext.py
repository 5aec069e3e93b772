"""Carrying one failover trace across services through the objects they change.

The component that starts a failover writes its span's W3C traceparent onto
the objects it touches (annotation `flotilla.io/traceparent`); the next
component continues that trace from there.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from opentelemetry import context, trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from flotilla.api.wellknown import TRACEPARENT_ANNOTATION

_PROPAGATOR = TraceContextTextMapPropagator()


def traceparent(span: trace.Span) -> str:
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


def context_from(annotations: Mapping[str, str]) -> context.Context | None:
    """The trace context stamped on an object, if any."""
    value = annotations.get(TRACEPARENT_ANNOTATION)
    if not value:
        return None
    return _extracted(value)


@functools.lru_cache(maxsize=4096)
def _extracted(traceparent: str) -> context.Context:
    # A binding in a failover is looked at a dozen times across the services, each time with the
    # same traceparent; a Context is immutable, so one parse serves them all.
    return _PROPAGATOR.extract({"traceparent": traceparent})


# The attributes of failover spans, one spelling each (OpenTelemetry semantic-convention style).
STEP = "flotilla.step"
CLUSTER = "flotilla.cluster"
BINDING = "flotilla.binding"
BINDING_KIND = "flotilla.binding.kind"
REASON = "flotilla.reason"
RTO_SECONDS = "flotilla.rto_seconds"
# On the span that closes a failover: from the cluster leaving Ready to its last binding recovered.
FAILOVER_RTO_SECONDS = "flotilla.failover.rto_seconds"

# On a Cluster, beside the failover's traceparent: when the status service published it not Ready,
# to the microsecond (RFC 3339). Ready's lastTransitionTime keeps whole seconds; a span of the
# failover that starts where the cluster left Ready starts here, on the detect span's clock.
DETECTED_AT_ANNOTATION = "flotilla.io/failover-detected-at"


def detected_at(annotations: Mapping[str, str], transition: datetime) -> datetime:
    """When the cluster left Ready: the status service's stamp when it is of this transition
    (`transition`, Ready's lastTransitionTime, to its second), else the transition."""
    try:
        stamped = datetime.fromisoformat(annotations.get(DETECTED_AT_ANNOTATION, ""))
    except ValueError:
        return transition
    if stamped.tzinfo is None or not transition <= stamped < transition + timedelta(seconds=1):
        return transition
    return stamped


# The steps of a failover, in the order they happen (`flotillactl trace` sorts by this).
STEPS = ("detect", "taint", "toleration-wait", "evict", "reschedule", "sync-works", "apply", "replicas-ready",
         "task-dropped", "failover-closed", "purge")


def failover_attributes(step: str, *, cluster: str = "", binding: str = "", kind: str = "",
                        reason: str = "") -> dict[str, str]:
    """A failover span's attributes: `binding` is `namespace/name` (just `name` when cluster-scoped)."""
    attributes = {STEP: step}
    for key, value in ((CLUSTER, cluster), (BINDING, binding), (BINDING_KIND, kind), (REASON, reason)):
        if value:
            attributes[key] = value
    return attributes


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def span_ns(moment: datetime) -> int:
    """A span timestamp (ns since the epoch) for a moment on the wall clock, to its microsecond.
    Integer arithmetic: `timestamp() * 1e9` rounds today's times to 256 ns either way, so two
    services stamping one moment could disagree on which came first."""
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def trace_id_of(annotations: Mapping[str, str]) -> str:
    """The trace an object was last changed in (the traceparent's trace-id), or ""."""
    parts = annotations.get(TRACEPARENT_ANNOTATION, "").split("-")
    return parts[1] if len(parts) == 4 else ""
