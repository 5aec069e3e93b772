"""The executor's metrics, Karmada's names under the `flotilla_` prefix."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from flotilla.runtime.metrics import exponential_buckets, result_of

BINDING_SYNC_WORK_DURATION = Histogram(
    "flotilla_binding_sync_work_duration_seconds", "Duration in seconds to sync a binding's Works",
    ["result"], buckets=exponential_buckets(0.001, 2, 12),
)
WORK_SYNC_WORKLOAD_DURATION = Histogram(
    "flotilla_work_sync_workload_duration_seconds", "Duration in seconds to sync a Work's workload to its cluster",
    ["result"], buckets=exponential_buckets(0.001, 2, 12),
)
_MEMBER_LABELS = ["result", "apiversion", "kind", "member_cluster"]
CREATE_RESOURCE_TO_CLUSTER = Counter(
    "flotilla_create_resource_to_cluster", "Resources created in member clusters", [*_MEMBER_LABELS, "recreate"],
)
UPDATE_RESOURCE_TO_CLUSTER = Counter(
    "flotilla_update_resource_to_cluster", "Resources updated in member clusters", _MEMBER_LABELS,
)
DELETE_RESOURCE_FROM_CLUSTER = Counter(
    "flotilla_delete_resource_from_cluster", "Resources deleted from member clusters", _MEMBER_LABELS,
)
# Interpreter script calls (flotilla.interpreter.pool): ok, error (the script failed), timeout,
# killed (its worker died), suspended (not run: the script kept overrunning), unavailable (no
# worker could start). Native rules are not counted: they never reach the pool.
INTERPRETER_CALLS = Counter(
    "flotilla_interpreter_calls_total", "Resource interpreter script calls, by result", ["result"],
)
INTERPRETER_CALL_DURATION = Histogram(
    "flotilla_interpreter_call_duration_seconds",
    "Duration in seconds of a resource interpreter script call, queueing included", ["result"],
    buckets=exponential_buckets(0.0001, 2, 14),
)


def count_apply(manifest: dict[str, object], cluster: str, first: bool, err: BaseException | None) -> None:
    """One manifest applied: the first apply of its Work counts as a create, later ones as updates."""
    labels = (result_of(err), str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")), cluster)
    if first:
        CREATE_RESOURCE_TO_CLUSTER.labels(*labels, "false").inc()
    else:
        UPDATE_RESOURCE_TO_CLUSTER.labels(*labels).inc()


def count_delete(manifest: dict[str, object], cluster: str, err: BaseException | None) -> None:
    labels = (result_of(err), str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")), cluster)
    DELETE_RESOURCE_FROM_CLUSTER.labels(*labels).inc()


def count_interpreter_call(result: str, seconds: float) -> None:
    INTERPRETER_CALLS.labels(result).inc()
    INTERPRETER_CALL_DURATION.labels(result).observe(seconds)
