"""The scheduler's metrics, Karmada's names under the `flotilla_` prefix."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram

from flotilla.runtime.metrics import exponential_buckets

# schedule_type values (Karmada's).
FIRST_SCHEDULE, RECONCILE_SCHEDULE, SCALE_SCHEDULE = "FirstSchedule", "ReconcileSchedule", "ScaleSchedule"
# result values (Karmada's).
SCHEDULED, ERROR = "scheduled", "error"
# queue_incoming_bindings_total event values (Karmada's).
BINDING_ADD, BINDING_UPDATE, BINDING_DELETE = "BindingAdd", "BindingUpdate", "BindingDelete"
CLUSTER_CHANGED, SCHEDULE_ATTEMPT_FAILURE = "ClusterChanged", "ScheduleAttemptFailure"

SCHEDULE_ATTEMPTS = Counter(
    "flotilla_schedule_attempts_total", "Number of attempts to schedule a binding", ["result", "schedule_type"],
)
E2E_SCHEDULING_DURATION = Histogram(
    "flotilla_e2e_scheduling_duration_seconds", "E2E scheduling latency in seconds (algorithm and result written)",
    ["result", "schedule_type"], buckets=exponential_buckets(0.001, 2, 15),
)
SCHEDULING_ALGORITHM_DURATION = Histogram(
    "flotilla_scheduling_algorithm_duration_seconds", "Scheduling algorithm latency in seconds, by step",
    ["schedule_step"], buckets=exponential_buckets(0.001, 2, 15),
)
QUEUE_INCOMING_BINDINGS = Counter(
    "flotilla_queue_incoming_bindings_total", "Bindings added to the scheduling queue, by event", ["event"],
)
# Every result and schedule type exported from the start, at 0: a series born at its first
# observation hides that observation from rate(), and a failover's one rescheduling would show
# on no panel.
for _result in (SCHEDULED, ERROR):
    for _type in (FIRST_SCHEDULE, RECONCILE_SCHEDULE, SCALE_SCHEDULE):
        SCHEDULE_ATTEMPTS.labels(_result, _type)
        E2E_SCHEDULING_DURATION.labels(_result, _type)


class StepTimer:
    """Times consecutive steps of one scheduling attempt: `done(step)` ends the current one."""

    def __init__(self) -> None:
        self._since = time.perf_counter()

    def done(self, step: str) -> None:
        now = time.perf_counter()
        SCHEDULING_ALGORITHM_DURATION.labels(step).observe(now - self._since)
        self._since = now


def record_attempt(ok: bool, schedule_type: str, seconds: float) -> None:
    result = SCHEDULED if ok else ERROR
    SCHEDULE_ATTEMPTS.labels(result, schedule_type).inc()
    E2E_SCHEDULING_DURATION.labels(result, schedule_type).observe(seconds)


def incoming(event: str, count: int = 1) -> None:
    QUEUE_INCOMING_BINDINGS.labels(event).inc(count)
