"""Mutating admission: Karmada's defaults, filled in once and only where the user left a gap."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf.message import Message

from flotilla.api import codec
from flotilla.api.taints import TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE
from flotilla.api.v1.cluster_pb2 import Cluster
from flotilla.api.v1.policy_pb2 import ClusterPropagationPolicy, PropagationPolicy
from flotilla.api.wellknown import CPP_PERMANENT_ID_LABEL, PP_PERMANENT_ID_LABEL
from services.webhook.defaulting import AdmissionConfig, default_object
from tests.admission_cases import VALID_BASES, parse_document
from tests.factories import EXAMPLE_FILES

NOW = datetime(2026, 11, 22, 3, 13, 39, 250_000, tzinfo=UTC)
CONFIG = AdmissionConfig()
ID_LABEL = PP_PERMANENT_ID_LABEL

PP = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
"""


def defaulted(
    doc: dict[str, Any] | str, old: Message | None = None, config: AdmissionConfig = CONFIG, now: datetime = NOW
) -> Any:
    obj = codec.from_dict(parse_document(doc) if isinstance(doc, str) else doc)
    default_object(obj, old, config, now)
    return obj


def policy(**spec: Any) -> dict[str, Any]:
    doc = parse_document(PP)
    doc["spec"].update(spec)
    return doc


def tolerations(obj: PropagationPolicy | ClusterPropagationPolicy) -> list[dict[str, Any]]:
    return codec.to_dict(obj)["spec"].get("placement", {}).get("clusterTolerations", [])


def failover(obj: PropagationPolicy) -> dict[str, Any]:
    return codec.to_dict(obj)["spec"]["failover"]


# -- default tolerations --------------------------------------------------------------------------


def test_default_tolerations_are_added() -> None:
    assert tolerations(defaulted(PP)) == [
        {"key": TAINT_CLUSTER_NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600},
        {"key": TAINT_CLUSTER_UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600},
    ]


def test_own_tolerations_are_kept_without_duplicates() -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "tolerations.yaml")
    doc = codec.load_yaml_documents(path.read_text())[0]
    assert tolerations(defaulted(doc)) == doc["spec"]["placement"]["clusterTolerations"]


@pytest.mark.parametrize(
    ("own", "added"),
    [
        # Tolerating one taint in any way leaves only the other to default.
        ({"key": TAINT_CLUSTER_NOT_READY, "operator": "Exists", "effect": "NoExecute"}, [TAINT_CLUSTER_UNREACHABLE]),
        ({"key": TAINT_CLUSTER_UNREACHABLE, "operator": "Exists"}, [TAINT_CLUSTER_NOT_READY]),
        ({"key": TAINT_CLUSTER_NOT_READY, "operator": "Equal", "effect": "NoExecute"}, [TAINT_CLUSTER_UNREACHABLE]),
        # An empty key with Exists tolerates every taint.
        ({"operator": "Exists"}, []),
        ({"operator": "Exists", "effect": "NoExecute"}, []),
        # Tolerating the NoSchedule taint says nothing about eviction.
        (
            {"key": TAINT_CLUSTER_NOT_READY, "operator": "Exists", "effect": "NoSchedule"},
            [TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE],
        ),
        # The taint manager's taints have no value, so a valued Equal toleration does not match them.
        (
            {"key": TAINT_CLUSTER_NOT_READY, "operator": "Equal", "value": "x", "effect": "NoExecute"},
            [TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE],
        ),
    ],
)
def test_only_untolerated_taints_get_a_default(own: dict[str, Any], added: list[str]) -> None:
    obj = defaulted(policy(placement={"clusterTolerations": [own]}))
    result = tolerations(obj)
    assert result[0] == own
    assert [t["key"] for t in result[1:]] == added


def test_zero_seconds_adds_no_default_toleration() -> None:
    none = AdmissionConfig(default_not_ready_toleration_seconds=0, default_unreachable_toleration_seconds=0)
    assert tolerations(defaulted(PP, config=none)) == []
    unreachable_only = AdmissionConfig(
        default_not_ready_toleration_seconds=0, default_unreachable_toleration_seconds=45
    )
    assert tolerations(defaulted(PP, config=unreachable_only)) == [
        {"key": TAINT_CLUSTER_UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 45}
    ]


def test_negative_default_toleration_seconds_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="default_not_ready_toleration_seconds"):
        AdmissionConfig(default_not_ready_toleration_seconds=-1)


# -- spec defaults --------------------------------------------------------------------------------


def test_crd_defaults_of_the_spec() -> None:
    spec = codec.to_dict(defaulted(PP))["spec"]
    assert (spec["schedulerName"], spec["conflictResolution"], spec["preemption"]) == (
        "default-scheduler",
        "Abort",
        "Never",
    )
    kept = codec.to_dict(defaulted(policy(schedulerName="mine", conflictResolution="Overwrite", preemption="Always")))
    assert (kept["spec"]["schedulerName"], kept["spec"]["conflictResolution"], kept["spec"]["preemption"]) == (
        "mine",
        "Overwrite",
        "Always",
    )


def test_selector_namespace_is_the_policy_namespace() -> None:
    doc = policy(resourceSelectors=[{"apiVersion": "v1", "kind": "ConfigMap"}, {"apiVersion": "v1", "kind": "Secret"}])
    doc["metadata"]["namespace"] = "shop"
    doc["spec"]["resourceSelectors"][1]["namespace"] = "elsewhere"  # left for validation to refuse
    selectors = codec.to_dict(defaulted(doc))["spec"]["resourceSelectors"]
    assert [s.get("namespace") for s in selectors] == ["shop", "elsewhere"]


def test_cluster_policy_selectors_keep_no_namespace() -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "tolerations.yaml")
    obj = defaulted(codec.load_yaml_documents(path.read_text())[0])
    assert "namespace" not in codec.to_dict(obj)["spec"]["resourceSelectors"][0]


def test_service_import_propagates_its_dependencies() -> None:
    selector = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport", "name": "db"}
    assert codec.to_dict(defaulted(policy(resourceSelectors=[selector])))["spec"]["propagateDeps"] is True
    assert "propagateDeps" not in codec.to_dict(defaulted(PP))["spec"]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ({"maxGroups": 2}, {"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}),
        ({"spreadByField": "region", "minGroups": 2}, {"spreadByField": "region", "minGroups": 2}),
        ({"spreadByLabel": "rack"}, {"spreadByLabel": "rack", "minGroups": 1}),
        ({"spreadByField": "cluster", "minGroups": -1}, {"spreadByField": "cluster", "minGroups": -1}),
    ],
)
def test_spread_constraint_defaults(constraint: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = defaulted(policy(placement={"spreadConstraints": [constraint]}))
    assert codec.to_dict(obj)["spec"]["placement"]["spreadConstraints"] == [expected]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}),
        (
            {"replicaSchedulingType": "Divided"},
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
        ),
        (
            {"replicaDivisionPreference": "Aggregated"},
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
        ),
        ({"replicaSchedulingType": "Duplicated"}, {"replicaSchedulingType": "Duplicated"}),
    ],
)
def test_replica_scheduling_defaults(given: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = defaulted(policy(placement={"replicaScheduling": given}))
    assert codec.to_dict(obj)["spec"]["placement"]["replicaScheduling"] == expected


def test_absent_replica_scheduling_stays_absent() -> None:
    assert "replicaScheduling" not in codec.to_dict(defaulted(PP))["spec"]["placement"]


# -- failover -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "purge_mode"),
    [("", "Gracefully"), ("Graciously", "Gracefully"), ("Immediately", "Directly"), ("Never", "Never")],
)
def test_application_purge_mode_default_and_spelling(written: str, purge_mode: str) -> None:
    application: dict[str, Any] = {"decisionConditions": {}}
    if written:
        application["purgeMode"] = written
    assert failover(defaulted(policy(failover={"application": application})))["application"]["purgeMode"] == purge_mode


@pytest.mark.parametrize(
    ("written", "purge_mode"),
    [("", "Gracefully"), ("Graciously", "Gracefully"), ("Immediately", "Directly"), ("Directly", "Directly")],
)
def test_cluster_purge_mode_default_and_spelling(written: str, purge_mode: str) -> None:
    cluster = {"purgeMode": written} if written else {}
    assert failover(defaulted(policy(failover={"cluster": cluster})))["cluster"] == {"purgeMode": purge_mode}


@pytest.mark.parametrize(
    ("application", "grace"),
    [
        ({}, 600),
        ({"purgeMode": "Graciously"}, 600),
        ({"purgeMode": "Gracefully", "gracePeriodSeconds": 120}, 120),
        ({"purgeMode": "Directly"}, None),
        ({"purgeMode": "Never"}, None),
    ],
)
def test_grace_period_default(application: dict[str, Any], grace: int | None) -> None:
    obj = defaulted(policy(failover={"application": {"decisionConditions": {}, **application}}))
    assert failover(obj)["application"].get("gracePeriodSeconds") == grace


@pytest.mark.parametrize(
    ("given", "seconds"), [({}, 300), ({"tolerationSeconds": 0}, 0), ({"tolerationSeconds": 60}, 60)]
)
def test_decision_toleration_seconds_default(given: dict[str, Any], seconds: int) -> None:
    obj = defaulted(policy(failover={"application": {"decisionConditions": given}}))
    assert failover(obj)["application"]["decisionConditions"] == {"tolerationSeconds": seconds}


def test_missing_decision_conditions_are_not_invented() -> None:
    obj = defaulted(policy(failover={"application": {"purgeMode": "Never"}}))
    assert "decisionConditions" not in failover(obj)["application"]


# -- permanent id ---------------------------------------------------------------------------------


def test_permanent_id_added_on_create() -> None:
    obj = defaulted(PP)
    uuid.UUID(obj.metadata.labels[ID_LABEL])
    other = defaulted(PP)
    assert other.metadata.labels[ID_LABEL] != obj.metadata.labels[ID_LABEL]


def test_cluster_propagation_policy_has_its_own_permanent_id_label() -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "tolerations.yaml")
    labels = defaulted(codec.load_yaml_documents(path.read_text())[0]).metadata.labels
    assert list(labels) == [CPP_PERMANENT_ID_LABEL]


def test_permanent_id_kept_from_the_stored_object_on_update() -> None:
    old = defaulted(PP)
    new = defaulted(PP, old=old)
    assert new.metadata.labels[ID_LABEL] == old.metadata.labels[ID_LABEL]


def test_a_changed_permanent_id_is_left_for_validation() -> None:
    old = defaulted(PP)
    doc = parse_document(PP)
    doc["metadata"]["labels"] = {ID_LABEL: "mine"}
    assert defaulted(doc, old=old).metadata.labels[ID_LABEL] == "mine"


def test_no_policy_finalizer_is_added() -> None:
    assert list(defaulted(PP).metadata.finalizers) == []


# -- Cluster --------------------------------------------------------------------------------------

CLUSTER = """\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
spec:
  taints:
    - key: maintenance
      effect: NoSchedule
    - key: dedicated
      value: gpu
      effect: NoExecute
    - key: cluster.karmada.io/not-ready
      effect: NoExecute
      timeAdded: "2026-11-01T00:00:00Z"
"""


def taints(obj: Cluster) -> dict[str, dict[str, Any]]:
    return {t["key"]: t for t in codec.to_dict(obj)["spec"]["taints"]}


def test_no_execute_taints_get_time_added() -> None:
    found = taints(defaulted(CLUSTER))
    assert "timeAdded" not in found["maintenance"]
    assert found["dedicated"]["timeAdded"] == "2026-11-22T03:13:39Z"  # second precision, as on the wire
    assert found["cluster.karmada.io/not-ready"]["timeAdded"] == "2026-11-01T00:00:00Z"


def test_reapplied_no_execute_taint_keeps_its_time() -> None:
    old = defaulted(CLUSTER)
    later = NOW + timedelta(minutes=5)
    assert taints(defaulted(CLUSTER, old=old, now=later))["dedicated"]["timeAdded"] == "2026-11-22T03:13:39Z"
    changed = CLUSTER.replace("value: gpu", "value: tpu")
    assert taints(defaulted(changed, old=old, now=later))["dedicated"]["timeAdded"] == "2026-11-22T03:18:39Z"


def test_cluster_sync_mode_and_zones() -> None:
    spec = codec.to_dict(defaulted(CLUSTER.replace("spec:\n", "spec:\n  zone: us-east-1a\n")))["spec"]
    assert (spec["syncMode"], spec["zone"], spec["zones"]) == ("Push", "us-east-1a", ["us-east-1a"])
    pull = CLUSTER.replace("spec:\n", "spec:\n  syncMode: Pull\n  zone: a\n  zones: [b, c]\n")
    spec = codec.to_dict(defaulted(pull))["spec"]
    assert (spec["syncMode"], spec["zone"], spec["zones"]) == ("Pull", "a", ["b", "c"])


# -- idempotency and scope ------------------------------------------------------------------------


def all_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = [(name, parse_document(text)) for name, text in VALID_BASES]
    for path in EXAMPLE_FILES:
        docs += [(f"{path.name}:{d['kind']}", d) for d in codec.load_yaml_documents(path.read_text())]
    return [*docs, ("cluster-with-taints", parse_document(CLUSTER))]


@pytest.mark.parametrize(("name", "doc"), all_documents(), ids=[d[0] for d in all_documents()])
def test_defaulting_is_idempotent(name: str, doc: dict[str, Any]) -> None:
    once = defaulted(doc)
    twice = codec.from_dict(codec.to_dict(once))
    default_object(twice, None, CONFIG, NOW + timedelta(hours=1))
    assert codec.to_dict(twice) == codec.to_dict(once)


@pytest.mark.parametrize(("name", "doc"), all_documents(), ids=[d[0] for d in all_documents()])
def test_reapplying_the_same_document_changes_nothing(name: str, doc: dict[str, Any]) -> None:
    stored = defaulted(doc)
    assert defaulted(doc, old=stored, now=NOW + timedelta(hours=1)) == stored


@pytest.mark.parametrize("name", ["deployment", "health-interpreter", "taint-policy"])
def test_kinds_without_defaults_are_untouched(name: str) -> None:
    doc = parse_document(dict(VALID_BASES)[name])
    assert codec.to_dict(defaulted(doc)) == codec.to_dict(codec.from_dict(doc))


def test_examples_keep_everything_the_user_wrote() -> None:
    for path in EXAMPLE_FILES:
        for doc in codec.load_yaml_documents(path.read_text()):
            assert _contains(codec.to_dict(defaulted(doc)), doc), f"{path.name}: {doc['kind']}"


def _contains(stored: Any, written: Any) -> bool:
    if isinstance(written, dict):
        return isinstance(stored, dict) and all(k in stored and _contains(stored[k], v) for k, v in written.items())
    if isinstance(written, list):
        return isinstance(stored, list) and all(any(_contains(s, w) for s in stored) for w in written)
    return stored == written


@pytest.mark.parametrize(("given", "expected"), [
    ({"enabled": True}, {"enabled": True, "stabilizationWindowSeconds": 600, "maxConcurrent": 1}),
    ({}, {"enabled": False, "stabilizationWindowSeconds": 600, "maxConcurrent": 1}),
    ({"enabled": True, "stabilizationWindowSeconds": 30, "maxConcurrent": 5},
     {"enabled": True, "stabilizationWindowSeconds": 30, "maxConcurrent": 5}),
])
def test_failback_defaults(given: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = defaulted(policy(failover={"cluster": {"purgeMode": "Gracefully", "failback": given}}))
    assert failover(obj)["cluster"]["failback"] == expected
