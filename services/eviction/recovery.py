"""A failover's recovery, observed once by whichever write set its record's recovered_time
(the graceful eviction controller dropping the last task, or the failover-history controller):
the `flotilla_failover_recovery_seconds` histogram, a log line and a span carrying the RTO."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry import trace
from prometheus_client import Histogram

from flotilla.api.bindings import Binding
from flotilla.api.v1 import work_pb2
from flotilla.rules.failover_history import recovery_seconds
from flotilla.runtime.tracecontext import RTO_SECONDS, context_from, failover_attributes

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("flotilla.rules.eviction_tasks")

RECOVERY_SECONDS = Histogram(
    "flotilla_failover_recovery_seconds",
    "From a cluster's eviction to every cluster of the new placement reporting Healthy",
    buckets=(1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600),
)


def observe_recovered(binding: Binding, key: str, recovered: Sequence[work_pb2.FailoverRecord]) -> None:
    """Once per record, by whichever write set its recovered_time."""
    for record in recovered:
        seconds = recovery_seconds(record)
        if seconds is not None:
            RECOVERY_SECONDS.observe(seconds)
            _trace_recovered(binding, key, record, seconds)
            log.info("event=failover-recovered binding=%s kind=%s from=%s to=%s seconds=%.3f", key,
                     binding.kind, record.from_cluster, ",".join(record.to_clusters), seconds)


def _trace_recovered(binding: Binding, key: str, record: work_pb2.FailoverRecord, seconds: float) -> None:
    """The new placement turned Healthy: a span from the eviction to then, carrying the binding's RTO."""
    parent = context_from(binding.metadata.annotations)
    if parent is None:
        return
    kind, _, name = key.partition(":")
    attributes = failover_attributes("replicas-ready", cluster=",".join(record.to_clusters), binding=name,
                                     kind=kind, reason=record.reason)
    span = _tracer.start_span("binding.replicas_ready", context=parent, start_time=record.time.ToNanoseconds(),
                              attributes={**attributes, RTO_SECONDS: seconds,
                                          "flotilla.evicted_from": record.from_cluster})
    span.end(end_time=record.recovered_time.ToNanoseconds())
