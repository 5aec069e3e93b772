"""Work statuses -> aggregatedStatus and FullyApplied; member statuses -> the template's status."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.conditions import condition_status
from flotilla.api.v1 import work_pb2
from flotilla.interpreter.health import HealthInterpreter
from flotilla.rules import aggregated_status
from services.executor import aggregation
from services.executor.binding_status import aggregate_into
from services.executor.work_status import MAX_REFLECTED_STATUS_BYTES, manifest_statuses

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
RESOURCE = work_pb2.ObjectReference(api_version="apps/v1", kind="Deployment", namespace="default", name="nginx")


def work(cluster: str, applied: str | None = "True", message: str = "", status: dict[str, Any] | None = None,
         health: str = "Healthy", deleting: bool = False, identity: tuple[str, str, str, str] = (
             "apps", "Deployment", "default", "nginx"), generation: int | None = 1) -> work_pb2.Work:
    w = work_pb2.Work()
    w.metadata.name, w.metadata.namespace = "nginx-687f7fb96f", f"karmada-es-{cluster}"
    if generation is not None:
        w.metadata.annotations["resourcetemplate.karmada.io/generation"] = str(generation)
    if deleting:
        w.metadata.deletion_timestamp.FromSeconds(1)
    if applied is not None:
        w.status.conditions.add(type="Applied", status=applied, message=message)
    if status is not None:
        group, kind, namespace, name = identity
        w.status.manifest_statuses.add(
            identifier=work_pb2.ResourceIdentifier(group=group, version="v1", kind=kind, namespace=namespace,
                                                   name=name),
            status=codec.raw_json(status), health=health)
    return w


def summary(items: list[work_pb2.AggregatedStatusItem]) -> list[tuple[Any, ...]]:
    return [(i.cluster_name, i.applied, i.applied_message, i.health, json.loads(i.status) if i.status else None)
            for i in items]


def test_status_items_one_per_live_work_sorted_by_cluster() -> None:
    found = [
        work("m3", status={"replicas": 1}),
        work("m1", applied="False", message="Failed to apply all manifests (0/1): boom"),
        work("m2", status={"replicas": 2}, health="Unhealthy"),
        work("m4", applied=None),
        work("m5", status={"replicas": 5}, identity=("apps", "Deployment", "default", "other")),
        work("m6", status={"replicas": 6}, deleting=True),
    ]
    assert summary(aggregation.status_items(found, RESOURCE, [], NOW)) == [
        ("m1", False, "Failed to apply all manifests (0/1): boom", "Unknown", None),
        ("m2", True, "", "Unhealthy", {"replicas": 2}),
        ("m3", True, "", "Healthy", {"replicas": 1}),
        ("m4", False, "", "Unknown", None),
        ("m5", True, "", "Unknown", None),
    ]


def test_settled_and_first_collection_time_carry_over() -> None:
    first = aggregation.status_items([work("m1", status={"replicas": 1}), work("m2", applied="False")],
                                     RESOURCE, [], NOW)
    assert [(i.cluster_name, i.settled, i.HasField("creation_timestamp")) for i in first] == [
        ("m1", True, True), ("m2", False, False)]
    later = datetime(2024, 5, 1, 13, 0, 0, tzinfo=UTC)
    second = aggregation.status_items([work("m1", status={"replicas": 1}, health="Unhealthy"),
                                       work("m2", status={"replicas": 1}, health="Unknown")], RESOURCE, first, later)
    assert [(i.cluster_name, i.settled, i.creation_timestamp.seconds) for i in second] == [
        ("m1", True, int(NOW.timestamp())), ("m2", False, int(later.timestamp()))]


@pytest.mark.parametrize(("items", "expected", "applied"), [
    ([("m1", True), ("m2", True)], {"m1", "m2"}, True),
    ([("m1", True), ("m2", False)], {"m1", "m2"}, False),
    ([("m1", True)], {"m1", "m2"}, False),
    ([("m1", True), ("m3", True)], {"m1", "m2"}, False),
    ([("m1", True), ("m2", True)], {"m1"}, False),
    ([], set(), False),
])
def test_fully_applied(items: list[tuple[str, bool]], expected: set[str], applied: bool) -> None:
    status_items = [work_pb2.AggregatedStatusItem(cluster_name=c, applied=a) for c, a in items]
    assert aggregated_status.fully_applied(status_items, expected) is applied


def test_fully_applied_condition_wording() -> None:
    assert aggregated_status.fully_applied_condition(True) == (
        "True", "FullyAppliedSuccess", "All works have been successfully applied")
    assert aggregated_status.fully_applied_condition(False) == (
        "False", "FullyAppliedFailed", "Failed to apply all works, see status.aggregatedStatus for details")


def template(api_version: str, kind: str, generation: int = 2, status: dict[str, Any] | None = None) -> Any:
    t = codec.from_dict({"apiVersion": api_version, "kind": kind,
                         "metadata": {"name": "nginx", "namespace": "default"}, "spec": {},
                         **({"status": status} if status is not None else {})})
    t.metadata.generation = generation
    return t


def items(*statuses: tuple[str, dict[str, Any] | None]) -> list[work_pb2.AggregatedStatusItem]:
    return [work_pb2.AggregatedStatusItem(cluster_name=c, applied=True, status=codec.raw_json(s) if s else b"")
            for c, s in statuses]


def deployment(replicas: int, ready: int, **extra: int) -> dict[str, Any]:
    return {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": replicas, "availableReplicas": ready,
            "observedGeneration": 1, **extra}


def test_deployment_status_is_summed_and_observed_when_every_member_caught_up() -> None:
    old = {"conditions": [{"type": "Available", "status": "True"}], "observedGeneration": 1, "replicas": 9}
    result = aggregation.template_status(
        template("apps/v1", "Deployment", status=old),
        items(("m1", deployment(1, 1)), ("m2", deployment(2, 1, unavailableReplicas=1))),
        {"m1": 2, "m2": 2}, NOW)
    assert result == {"conditions": [{"type": "Available", "status": "True"}], "replicas": 3, "updatedReplicas": 3,
                      "readyReplicas": 2, "availableReplicas": 2, "unavailableReplicas": 1, "observedGeneration": 2}


@pytest.mark.parametrize(("member_status", "dispatched", "observed"), [
    # The Work of m2 still carries generation 1 of the template.
    (deployment(2, 2), {"m1": 2, "m2": 1}, 1),
    # Karmada's reflected fields, when present, decide.
    ({**deployment(2, 2), "resourceTemplateGeneration": 2, "generation": 5, "observedGeneration": 5}, {}, 2),
    ({**deployment(2, 2), "resourceTemplateGeneration": 1, "generation": 5, "observedGeneration": 5},
     {"m2": 2}, 1),
    ({**deployment(2, 2), "resourceTemplateGeneration": 2, "generation": 6, "observedGeneration": 5},
     {"m2": 2}, 1),
    # No status collected yet: not caught up.
    (None, {"m1": 2, "m2": 2}, 1),
])
def test_observed_generation_waits_for_every_member(member_status: dict[str, Any] | None, dispatched: dict[str, int],
                                                     observed: int) -> None:
    result = aggregation.template_status(
        template("apps/v1", "Deployment", status={"observedGeneration": 1}),
        items(("m1", {**deployment(1, 1), "resourceTemplateGeneration": 2}), ("m2", member_status)),
        dispatched, NOW)
    assert result["observedGeneration"] == observed


@pytest.mark.parametrize(("reported", "targets", "expected"), [
    # Scheduled, no Work seen yet: a fresh template gets no status at all (nothing written).
    ((), ["m1"], {}),
    # One target reported and caught up, the other not yet: not observed.
    ((("m1", {**deployment(1, 1), "resourceTemplateGeneration": 2}),), ["m1", "m2"],
     {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}),
    # Every target caught up.
    ((("m1", {**deployment(1, 1), "resourceTemplateGeneration": 2}),), ["m1"],
     {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 2}),
    # Placed nowhere: nothing to wait for, as Karmada.
    ((), [], {"observedGeneration": 2}),
])
def test_a_target_cluster_without_a_status_has_not_caught_up(
        reported: tuple[tuple[str, dict[str, Any]], ...], targets: list[str], expected: dict[str, Any]) -> None:
    result = aggregation.template_status(template("apps/v1", "Deployment"), items(*reported), {}, NOW, targets)
    assert result == expected


@pytest.mark.parametrize(("api_version", "kind", "members", "expected"), [
    ("apps/v1", "StatefulSet",
     [{"replicas": 1, "readyReplicas": 1, "currentReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
      {"replicas": 2, "readyReplicas": 0, "currentReplicas": 2, "updatedReplicas": 2}],
     {"replicas": 3, "readyReplicas": 1, "currentReplicas": 3, "updatedReplicas": 3, "availableReplicas": 1,
      "observedGeneration": 2}),
    ("apps/v1", "StatefulSet", [{"observedGeneration": 1}, {"observedGeneration": 1}],
     {"replicas": 0, "observedGeneration": 2}),
    ("apps/v1", "ReplicaSet",
     [{"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}, {"replicas": 2}],
     {"replicas": 3, "fullyLabeledReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 2}),
    ("apps/v1", "DaemonSet",
     [{"currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberReady": 2, "numberAvailable": 2,
       "updatedNumberScheduled": 2, "numberMisscheduled": 0},
      {"currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberReady": 1, "numberUnavailable": 2,
       "updatedNumberScheduled": 3}],
     {"currentNumberScheduled": 5, "numberMisscheduled": 0, "desiredNumberScheduled": 5, "numberReady": 3,
      "updatedNumberScheduled": 5, "numberAvailable": 2, "numberUnavailable": 2, "observedGeneration": 2}),
])
def test_workload_statuses_summed(api_version: str, kind: str, members: list[dict[str, Any]],
                                  expected: dict[str, Any]) -> None:
    result = aggregation.template_status(template(api_version, kind),
                                         items(("m1", members[0]), ("m2", members[1])), {"m1": 2, "m2": 2}, NOW)
    assert result == expected


def test_kinds_without_aggregation_get_none() -> None:
    assert aggregation.template_status(template("v1", "ConfigMap"), items(("m1", {"x": 1})), {}, NOW) is None


JOB_STARTED = {"active": 1, "startTime": "2024-05-01T10:00:00Z"}


@pytest.mark.parametrize(("members", "old", "expected"), [
    ([JOB_STARTED, {"active": 2, "startTime": "2024-05-01T09:00:00Z"}], {},
     {"active": 3, "startTime": "2024-05-01T09:00:00Z"}),
    ([{"succeeded": 2, "startTime": "2024-05-01T10:00:00Z", "completionTime": "2024-05-01T11:00:00Z",
       "conditions": [{"type": "Complete", "status": "True"}]},
      {"succeeded": 3, "startTime": "2024-05-01T10:30:00Z", "completionTime": "2024-05-01T11:30:00Z",
       "conditions": [{"type": "Complete", "status": "True"}]}], {},
     {"succeeded": 5, "startTime": "2024-05-01T10:00:00Z", "completionTime": "2024-05-01T11:30:00Z",
      "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "Job completed",
                      "lastProbeTime": "2024-05-01T12:00:00Z", "lastTransitionTime": "2024-05-01T12:00:00Z"}]}),
    ([JOB_STARTED, {"failed": 4, "conditions": [{"type": "Failed", "status": "True"}]}], {},
     {"active": 1, "failed": 4, "startTime": "2024-05-01T10:00:00Z",
      "conditions": [{"type": "Failed", "status": "True", "reason": "JobFailed",
                      "message": "Job executed failed in member clusters m2",
                      "lastProbeTime": "2024-05-01T12:00:00Z", "lastTransitionTime": "2024-05-01T12:00:00Z"}]}),
    # A finished Job's status is never rewritten.
    ([JOB_STARTED, JOB_STARTED], {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
     {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
])
def test_job_status(members: list[dict[str, Any]], old: dict[str, Any], expected: dict[str, Any]) -> None:
    result = aggregation.template_status(template("batch/v1", "Job", status=old),
                                         items(("m1", members[0]), ("m2", members[1])), {}, NOW)
    assert result == expected


def test_dispatched_generations_read_the_work_annotation() -> None:
    found = [work("m1", generation=3), work("m2", generation=None), work("m3", generation=1)]
    assert aggregation.dispatched_generations(found) == {"m1": 3, "m3": 1}


@pytest.mark.parametrize(("api_version", "kind"), [("v1", "ConfigMap"), ("v1", "Secret"),
                                                   ("rbac.authorization.k8s.io/v1", "ClusterRole")])
async def test_objects_without_a_health_signal_are_healthy_once_applied(api_version: str, kind: str) -> None:
    """Karmada #4951: their graceful eviction tasks must be able to complete."""
    manifest = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "cfg", "namespace": "default"}}
    w = work_pb2.Work()
    w.spec.workload.manifests.append(codec.raw_json(manifest))
    key = (api_version, kind, "default", "cfg")
    statuses, missing, errors = await manifest_statuses(w, {key: {**manifest, "data": {"a": "b"}}},
                                                        HealthInterpreter())
    assert (missing, errors) == ([], [])
    applied = work("m1", status={}, health=statuses[0].health,
                   identity=(statuses[0].identifier.group, kind, "default", "cfg"))
    resource = work_pb2.ObjectReference(api_version=api_version, kind=kind, namespace="default", name="cfg")
    [item] = aggregation.status_items([applied], resource, [], NOW)
    assert (item.applied, item.health) == (True, "Healthy")


def test_health_of_a_work_not_yet_applied_at_its_generation_is_unknown() -> None:
    """A Work rewritten (3 replicas instead of 2) but not yet applied reports what the member
    ran before: a graceful eviction must not read that as the new placement being healthy."""
    stale = work("m2", status={"replicas": 2, "readyReplicas": 2})
    stale.metadata.generation = 2
    stale.status.conditions[0].observed_generation = 1
    current = work("m3", status={"replicas": 3})
    current.metadata.generation = 2
    current.status.conditions[0].observed_generation = 2
    items = aggregation.status_items([stale, current], RESOURCE, [], NOW)
    assert [(i.cluster_name, i.health) for i in items] == [("m2", "Unknown"), ("m3", "Healthy")]


def test_health_of_a_work_still_carrying_the_old_replica_share_is_unknown() -> None:
    """The scheduler moved member m2 from 2 replicas to 3; until its Work says 3, what m2 reports
    (2/2 ready, Healthy) is not the new share's health."""
    def with_manifest(w: work_pb2.Work, replicas: int) -> work_pb2.Work:
        w.spec.workload.manifests.append(codec.raw_json({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default"}, "spec": {"replicas": replicas}}))
        return w

    found = [with_manifest(work("m2", status={"readyReplicas": 2}), 2),
             with_manifest(work("m3", status={"readyReplicas": 1}), 1)]
    shares = {"m2": 3, "m3": 1}
    assert aggregation.shares_not_dispatched(found, RESOURCE, shares) == {"m2"}
    items = aggregation.status_items(found, RESOURCE, [], NOW, shares)
    assert [(i.cluster_name, i.health) for i in items] == [("m2", "Unknown"), ("m3", "Healthy")]
    # Not revised (no cluster has replicas yet): nothing to compare.
    assert aggregation.shares_not_dispatched(found, RESOURCE, {"m2": 0, "m3": 0}) == set()


def test_a_work_of_a_cluster_no_longer_expected_is_not_reported() -> None:
    """The Work of a cluster whose graceful eviction task was just dropped is still there (not
    yet marked deleting): the binding reports only its placement, FullyApplied stays True, and
    one write covers the task's end instead of False then True again."""
    binding = work_pb2.ResourceBinding()
    binding.metadata.generation = 5
    binding.spec.resource.CopyFrom(RESOURCE)
    binding.spec.clusters.add(name="m2", replicas=1)
    found = [work("m1", status={"readyReplicas": 1}), work("m2", status={"readyReplicas": 1})]
    assert aggregate_into(binding, found, NOW)
    assert [(i.cluster_name, i.health) for i in binding.status.aggregated_status] == [("m2", "Healthy")]
    assert condition_status(binding.status.conditions, aggregated_status.FULLY_APPLIED) == "True"

    # With the task still there, its cluster's Work is reported as before.
    binding.spec.graceful_eviction_tasks.add(from_cluster="m1", purge_mode="Gracefully")
    assert aggregate_into(binding, found, NOW)
    assert [i.cluster_name for i in binding.status.aggregated_status] == ["m1", "m2"]
    assert condition_status(binding.status.conditions, aggregated_status.FULLY_APPLIED) == "True"


async def test_a_members_oversized_status_is_not_copied_into_the_work() -> None:
    """The member decides how large its status is: a Work (one etcd value) records at most
    MAX_REFLECTED_STATUS_BYTES of it, and says so."""
    manifest = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
    w = work_pb2.Work()
    w.spec.workload.manifests.append(codec.raw_json(manifest))
    key = ("example.com/v1", "Widget", "default", "w")
    huge = {**manifest, "status": {"blob": "x" * (MAX_REFLECTED_STATUS_BYTES + 1)}}
    statuses, missing, errors = await manifest_statuses(w, {key: huge}, HealthInterpreter())
    assert statuses[0].status == codec.raw_json({}) and statuses[0].health == "Healthy"
    assert missing == [] and "more than the" in errors[0]
