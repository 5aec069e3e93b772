"""Metrics every service shares: the work queues (client-go's names) and the eviction queues
(Karmada's names), under the `flotilla_` prefix. Service-specific ones live in the service's own
`metrics` module (services/status, services/executor, flotilla/scheduler).

No label ever carries a binding's name: labels are queue names, clusters, kinds and results.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from flotilla.api.v1 import work_pb2

__all__ = [
    "EVICTION_KIND_TOTAL",
    "EVICTION_PROCESSING_LATENCY",
    "EVICTION_PROCESSING_TOTAL",
    "EVICTION_QUEUE_DEPTH",
    "WORKQUEUE_ADDS",
    "WORKQUEUE_DEPTH",
    "WORKQUEUE_QUEUE_DURATION",
    "WORKQUEUE_RETRIES",
    "WORKQUEUE_WORK_DURATION",
    "Children",
    "count_eviction",
    "exponential_buckets",
    "resource_kind",
    "result_of",
    "timed",
]

P = ParamSpec("P")
R = TypeVar("R")
W = TypeVar("W", bound=MetricWrapperBase)

SUCCESS, ERROR = "success", "error"


class Children(Generic[W]):
    """A labelled metric's children, each looked up once: `labels()` takes a lock and checks its
    arguments at every call, and these are called per event. A child is made at its first use,
    as `labels()` makes it (a series appears once it has something to say)."""

    def __init__(self, metric: W) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], W] = {}

    def __call__(self, *values: str) -> W:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets, as Karmada uses them."""
    return tuple(start * factor**i for i in range(count))


def result_of(err: BaseException | None) -> str:
    return ERROR if err is not None else SUCCESS


def resource_kind(api_version: str, kind: str) -> str:
    """Karmada's `resource_kind` label: APIVersion and Kind concatenated."""
    return f"{api_version}/{kind}" if api_version else kind


def count_eviction(cluster: str, resource: work_pb2.ObjectReference) -> None:
    """One workload evicted from `cluster` (eviction_kind_total)."""
    _EVICTION_KINDS(cluster, resource_kind(resource.api_version, resource.kind)).inc()


# The work queues, as client-go's workqueue metrics provider names them.
WORKQUEUE_DEPTH = Gauge("flotilla_workqueue_depth", "Current depth of the work queue", ["name"])
WORKQUEUE_ADDS = Counter("flotilla_workqueue_adds_total", "Keys added to the work queue", ["name"])
WORKQUEUE_QUEUE_DURATION = Histogram(
    "flotilla_workqueue_queue_duration_seconds", "How long a key waits in the work queue before it is taken",
    ["name"], buckets=exponential_buckets(1e-6, 10, 10),
)
WORKQUEUE_WORK_DURATION = Histogram(
    "flotilla_workqueue_work_duration_seconds", "How long processing a key takes", ["name"],
    buckets=exponential_buckets(1e-6, 10, 10),
)
WORKQUEUE_RETRIES = Counter("flotilla_workqueue_retries_total", "Rate-limited re-adds (failed keys)", ["name"])

# The eviction queues (the taint manager's evictor, graceful eviction, application failover).
EVICTION_QUEUE_DEPTH = Gauge("flotilla_eviction_queue_depth", "Current depth of the eviction queue", ["name"])
EVICTION_KIND_TOTAL = Counter(
    "flotilla_eviction_kind_total", "Workloads evicted from a member cluster, by resource kind",
    ["member_cluster", "resource_kind"],
)
EVICTION_PROCESSING_LATENCY = Histogram(
    "flotilla_eviction_processing_latency_seconds", "From enqueueing an eviction key to its processing done",
    ["name"], buckets=exponential_buckets(0.001, 2, 15),
)
EVICTION_PROCESSING_TOTAL = Counter(
    "flotilla_eviction_processing_total", "Eviction keys processed, by result", ["name", "result"],
)


def timed(histogram: Histogram) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Observe an async function's duration in `histogram`, labelled `result` (success|error)."""

    by_result = Children(histogram)

    def wrap(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            err: BaseException | None = None
            try:
                return await fn(*args, **kwargs)
            except Exception as e:
                err = e
                raise
            finally:
                by_result(result_of(err)).observe(time.perf_counter() - started)

        return run

    return wrap


_EVICTION_KINDS = Children(EVICTION_KIND_TOTAL)
