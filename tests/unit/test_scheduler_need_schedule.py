"""When a binding is (re)scheduled (docs/karmada-rules.md §8.1), and which bindings a scheduler handles."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.api.wellknown import APPLIED_PLACEMENT_ANNOTATION
from flotilla.rules.scheduler_state import handled_by
from flotilla.scheduler.need_schedule import Trigger, applied_placement, need_schedule, placement_changed

DIVIDED = {"clusterAffinity": {"clusterNames": ["m1", "m2"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}
DUPLICATED = {"clusterAffinity": {"clusterNames": ["m1", "m2"]},
              "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
TERMS = {"clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"]},
                               {"affinityName": "b", "clusterNames": ["m2"]}],
         "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}


def binding(placement: dict[str, Any], replicas: int = 3, clusters: list[tuple[str, int]] | None = None,
            applied: dict[str, Any] | str | None = "same", status: dict[str, Any] | None = None,
            requirements: bool = True, **spec: Any) -> work_pb2.ResourceBinding:
    obj = codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
                 "replicas": replicas, "placement": placement,
                 "clusters": [{"name": n, "replicas": r} for n, r in clusters or []], **spec},
        "status": status or {},
    })
    assert isinstance(obj, work_pb2.ResourceBinding)
    if requirements:
        obj.spec.replica_requirements.resource_request["cpu"] = "100m"
    if applied == "same":
        obj.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement(obj.spec.placement)
    elif isinstance(applied, dict):
        obj.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = codec.to_json(applied)
    elif isinstance(applied, str):
        obj.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = applied
    return obj


CASES = [
    ("never scheduled: no annotation", binding(DIVIDED, applied=None), set(), Trigger.PLACEMENT_CHANGED),
    ("unreadable annotation", binding(DIVIDED, applied="{not json"), set(), Trigger.PLACEMENT_CHANGED),
    ("affinity changed", binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)],
                                 applied={**DIVIDED, "clusterAffinity": {"clusterNames": ["m1"]}}),
     set(), Trigger.PLACEMENT_CHANGED),
    ("tolerations changed", binding(DIVIDED, clusters=[("m1", 3)],
                                    applied={**DIVIDED, "clusterTolerations": [{"operator": "Exists"}]}),
     set(), Trigger.PLACEMENT_CHANGED),
    ("spread constraints changed", binding({**DIVIDED, "spreadConstraints": [{"spreadByField": "cluster",
                                                                             "minGroups": 1, "maxGroups": 2}]},
                                           clusters=[("m1", 3)], applied=DIVIDED),
     set(), Trigger.PLACEMENT_CHANGED),
    ("a field scheduling ignores changed (workloadAffinity)",
     binding({**DIVIDED, "workloadAffinity": {"affinity": {"groupByLabelKey": "app"}}}, clusters=[("m1", 3)],
             applied=DIVIDED),
     set(), None),
    ("steady divided", binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)]), set(), None),
    ("divided, a cluster was evicted", binding(DIVIDED, clusters=[("m2", 2)]), set(), Trigger.REPLICAS_CHANGED),
    ("divided scaled up", binding(DIVIDED, replicas=5, clusters=[("m1", 1), ("m2", 2)]), set(),
     Trigger.REPLICAS_CHANGED),
    ("duplicated, one target short", binding(DUPLICATED, clusters=[("m1", 3), ("m2", 2)]), set(),
     Trigger.REPLICAS_CHANGED),
    ("duplicated, steady: still always", binding(DUPLICATED, clusters=[("m1", 3), ("m2", 3)]), set(),
     Trigger.ALWAYS),
    ("no replicaScheduling: replicas never count, but it is Duplicated", binding({}, clusters=[("m1", 1)]), set(),
     Trigger.ALWAYS),
    ("non-workload", binding(DIVIDED, replicas=0, clusters=[("m1", 0)], requirements=False), set(), Trigger.ALWAYS),
    ("explicit reschedule newer than the last schedule",
     binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)], rescheduleTriggeredAt="2026-03-01T10:00:00Z",
             status={"lastScheduledTime": "2026-03-01T09:00:00Z"}),
     set(), Trigger.RESCHEDULE_REQUESTED),
    ("explicit reschedule older than the last schedule",
     binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)], rescheduleTriggeredAt="2026-03-01T08:00:00Z",
             status={"lastScheduledTime": "2026-03-01T09:00:00Z"}),
     set(), None),
    ("explicit reschedule but never scheduled",
     binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)], rescheduleTriggeredAt="2026-03-01T08:00:00Z"), set(), None),
    ("a target is being deleted", binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)]), {"m2"},
     Trigger.CLUSTER_DELETING),
    ("a non-target is being deleted", binding(DIVIDED, clusters=[("m1", 1), ("m2", 2)]), {"m3"}, None),
    # NotReady, NoSchedule taints and label changes are not triggers: nothing in the binding says so.
    ("clusterAffinities: observed term unchanged",
     binding(TERMS, clusters=[("m2", 3)], status={"schedulerObservingAffinityName": "b"},
             applied={**TERMS, "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1", "m9"]},
                                                     {"affinityName": "b", "clusterNames": ["m2"]}]}),
     set(), None),
    ("clusterAffinities: observed term changed",
     binding(TERMS, clusters=[("m2", 3)], status={"schedulerObservingAffinityName": "b"},
             applied={**TERMS, "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"]},
                                                     {"affinityName": "b", "clusterNames": ["m2", "m3"]}]}),
     set(), Trigger.PLACEMENT_CHANGED),
]


@pytest.mark.parametrize(("case", "obj", "deleting", "expected"), CASES, ids=[c[0] for c in CASES])
def test_need_schedule(case: str, obj: work_pb2.ResourceBinding, deleting: set[str],
                       expected: Trigger | None) -> None:
    assert need_schedule(obj, deleting) == expected


def test_applied_placement_round_trips() -> None:
    placement = codec.parse_as(policy_pb2.Placement, TERMS)
    assert isinstance(placement, policy_pb2.Placement)
    assert not placement_changed(placement, applied_placement(placement), "a")
    assert placement_changed(placement, applied_placement(placement), "")


@pytest.mark.parametrize(("scheduler", "labels", "spec", "expected"), [
    ("default-scheduler", {"propagationpolicy.karmada.io/permanent-id": "x"}, {}, True),
    ("default-scheduler", {"clusterpropagationpolicy.karmada.io/permanent-id": "x"}, {}, True),
    ("default-scheduler", {"binding.karmada.io/managed-by": "x"}, {}, True),
    ("default-scheduler", {}, {}, False),
    ("default-scheduler", {"propagationpolicy.karmada.io/permanent-id": "x"}, {"schedulerName": "other"}, False),
    ("other", {"propagationpolicy.karmada.io/permanent-id": "x"}, {"schedulerName": "other"}, True),
    ("default-scheduler", {"propagationpolicy.karmada.io/permanent-id": "x"}, {"suspension": {"scheduling": True}},
     False),
])
def test_handled_by(scheduler: str, labels: dict[str, str], spec: dict[str, Any], expected: bool) -> None:
    obj = binding(DIVIDED, **spec)
    obj.metadata.labels.update(labels)
    assert handled_by(obj, scheduler) is expected
