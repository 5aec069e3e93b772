"""Preserved-label injection (docs/karmada-rules.md §12.3), the cases tests/unit/test_executor_works.py
leaves out: which task's labels, a custom resource's manifest, a label the template already has, and
the labels' lifetime (only while the task exists)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import meta_pb2, work_pb2
from services.executor import works
from tests.unit.test_executor_works import binding, spec

JOB = "application.karmada.io/cluster-failover-jobid"


def task(cluster: str, mode: str = "Directly", job: str = "", before: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"from_cluster": cluster, "purge_mode": mode, "preserved_label_state": {JOB: job} if job else {},
            "clusters_before_failover": list(before or (cluster,))}


@pytest.mark.parametrize(("tasks", "cluster", "labels"), [
    # Two failovers in a row: the last one's job ID, not the first's.
    ([task("m1", job="first"), task("m3", job="second")], "m2", {JOB: "second"}),
    # A Gracefully task before the last Directly one changes nothing.
    ([task("m1", "Gracefully", job="old"), task("m3", job="new")], "m2", {JOB: "new"}),
    # The last task Directly without preserved state: nothing, even if an earlier one had some.
    ([task("m1", job="old"), task("m3")], "m2", {}),
    # Back onto any cluster the workload ran on before the last failover: nothing.
    ([task("m1", job="j", before=("m1", "m2"))], "m2", {}),
    ([task("m1", job="j", before=("m1", "m2"))], "m4", {JOB: "j"}),
])
def test_which_labels_are_injected(tasks: list[dict[str, Any]], cluster: str, labels: dict[str, str]) -> None:
    assert works.injected_labels(spec([(cluster, 0)], tasks=tasks), cluster) == labels


def flink() -> meta_pb2.Unstructured:
    t = codec.from_dict({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "flink-app", "namespace": "default", "labels": {"app": "flink", JOB: "stale"}},
        "spec": {"job": {"parallelism": 2}}, "status": {"jobStatus": {"jobId": "j-0"}}})
    assert isinstance(t, meta_pb2.Unstructured)
    return t


def labels_sent(b: work_pb2.ResourceBinding) -> dict[str, str]:
    (w,) = works.build_works(b, flink(), True)
    return dict(json.loads(w.spec.workload.manifests[0])["metadata"]["labels"])


def test_a_custom_resource_carries_the_job_id_over_the_templates_own_label() -> None:
    b = binding(spec([("m2", 0)], tasks=[task("m1", job="j-42")]))
    assert labels_sent(b) == {"app": "flink", JOB: "j-42", "resourcebinding.karmada.io/permanent-id": "bid"}


def test_the_label_lives_only_as_long_as_the_task() -> None:
    b = binding(spec([("m2", 0)], tasks=[task("m1", job="j-42")]))
    assert labels_sent(b)[JOB] == "j-42"
    del b.spec.graceful_eviction_tasks[:]
    # Back to the template's own labels once the task is dropped.
    assert labels_sent(b)[JOB] == "stale"
