"""Karmada YAML <-> messages: exact round trips, errors with paths, Kubernetes' JSON shape."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.codec import CodecError, FieldError
from flotilla.api.v1 import coordination_pb2, meta_pb2, policy_pb2, work_pb2
from tests.factories import EXAMPLE_FILES, EXAMPLES_DIR


def test_the_seed_examples_are_there() -> None:
    # Round trips below are parametrised over these files: none found would test nothing.
    assert len(EXAMPLE_FILES) >= 7, f"no Karmada examples in {EXAMPLES_DIR}"

HEALTH_INTERPRETER = """\
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: deployment-all-ready
spec:
  target:
    apiVersion: apps/v1
    kind: Deployment
  customizations:
    healthInterpretation:
      luaScript: >
        function InterpretHealth(observedObj)
          return observedObj.status.readyReplicas == observedObj.spec.replicas
        end
"""


def _documents(path: Path) -> list[dict[str, Any]]:
    return codec.load_yaml_documents(path.read_text())


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_example_round_trips_exactly(path: Path) -> None:
    documents = _documents(path)
    assert documents
    for document in documents:
        original = copy.deepcopy(document)
        assert codec.to_dict(codec.from_dict(document)) == original


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_example_survives_yaml_text_and_protobuf_bytes(path: Path) -> None:
    for document in _documents(path):
        msg = codec.from_dict(document)
        again = type(msg).FromString(msg.SerializeToString(deterministic=True))
        assert codec.load_yaml_documents(codec.to_yaml(again)) == [document]
        assert json.loads(codec.to_json(again)) == document


def test_examples_pick_the_right_message_types() -> None:
    for path in EXAMPLE_FILES:
        for document in _documents(path):
            msg = codec.from_dict(document)
            builtin = document["apiVersion"].split("/")[0].endswith(".karmada.io")
            assert type(msg).__name__ == (document["kind"] if builtin else "Unstructured"), path.name


def test_top_level_key_order() -> None:
    doc = {
        "status": {"kubernetesVersion": "v1.31.0"},
        "spec": {"syncMode": "Push"},
        "metadata": {"name": "member1"},
        "kind": "Cluster",
        "apiVersion": "cluster.karmada.io/v1alpha1",
    }
    assert list(codec.to_dict(codec.from_dict(doc))) == ["apiVersion", "kind", "metadata", "spec", "status"]


# -- errors -------------------------------------------------------------------

PP = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p"}}
CLUSTER = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1"}}
RB = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": "b", "namespace": "d"}}


def _with(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**copy.deepcopy(base), **fields}


MALFORMED = [
    pytest.param(
        _with(
            PP,
            spec={
                "placement": {
                    "clusterTolerations": [{"key": "k", "operatr": "Exists"}],
                }
            },
        ),
        "spec.placement.clusterTolerations[0].operatr",
        "unknown field",
        id="misspelt-toleration-operator",
    ),
    pytest.param(
        _with(PP, spec={"priority": "10"}), "spec.priority", "expected integer, got string", id="int-as-string"
    ),
    pytest.param(
        _with(PP, spec={"placement": {"spreadConstraints": [{"maxGroups": 3_000_000_000}]}}),
        "spec.placement.spreadConstraints[0].maxGroups",
        "3000000000 is out of range for int32",
        id="int32-overflow",
    ),
    pytest.param(
        _with(RB, spec={"replicas": True}), "spec.replicas", "expected integer, got boolean", id="bool-as-int"
    ),
    pytest.param(
        _with(PP, spec={"propagateDeps": "yes"}), "spec.propagateDeps", "expected boolean, got string", id="str-as-bool"
    ),
    pytest.param(_with(PP, spec={"placement": []}), "spec.placement", "expected object, got list", id="list-as-object"),
    pytest.param(
        _with(CLUSTER, spec={"taints": {"key": "a", "effect": "NoSchedule"}}),
        "spec.taints",
        "expected list, got object",
        id="object-as-list",
    ),
    pytest.param(
        _with(CLUSTER, spec={"taints": [{"key": "a", "effect": "NoExecute", "timeAdded": "yesterday"}]}),
        "spec.taints[0].timeAdded",
        'invalid timestamp "yesterday": expected RFC 3339, like 2026-01-02T15:04:05Z',
        id="bad-timestamp",
    ),
    pytest.param(
        _with(CLUSTER, spec={"taints": [{"key": "a", "effect": "NoExecute", "timeAdded": "2026-02-30T00:00:00Z"}]}),
        "spec.taints[0].timeAdded",
        'invalid timestamp "2026-02-30T00:00:00Z": expected RFC 3339, like 2026-01-02T15:04:05Z',
        id="impossible-date",
    ),
    pytest.param(
        _with(CLUSTER, metadata={"name": "m1", "labels": {"tier": 1}}),
        "metadata.labels[tier]",
        "expected string, got integer",
        id="label-value-int",
    ),
    pytest.param(
        _with(
            PP,
            spec={"placement": {"clusterTolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 1.5}]}},
        ),
        "spec.placement.clusterTolerations[0].tolerationSeconds",
        "expected integer, got number",
        id="float-as-int",
    ),
    pytest.param(
        _with(RB, spec={"gracefulEvictionTasks": [{"fromCluster": "m1", "gracePeriodSeconds": -(2**31) - 1}]}),
        "spec.gracefulEvictionTasks[0].gracePeriodSeconds",
        "-2147483649 is out of range for int32",
        id="int32-underflow",
    ),
    pytest.param(
        _with(RB, status={"schedulerObservingAffinityName": 3}),
        "status.schedulerObservingAffinityName",
        "expected string, got integer",
        id="int-as-string-field",
    ),
    pytest.param(
        _with(PP, spec={"resourceSelectors": "apps/v1 Deployment"}),
        "spec.resourceSelectors",
        "expected list, got string",
        id="string-as-list",
    ),
    pytest.param(
        _with(RB, spec={"clusters": ["member1"]}),
        "spec.clusters[0]",
        "expected object, got string",
        id="list-item-not-object",
    ),
    pytest.param(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "n", "generateName": "x"}},
        "metadata.generateName",
        "unknown field",
        id="template-metadata-unknown-field",
    ),
    pytest.param({"apiVersion": "v1", "metadata": {"name": "n"}}, "kind", "required", id="missing-kind"),
    pytest.param(
        _with(RB, apiVersion="work.karmada.io/v1alpha1"),
        "apiVersion",
        'ResourceBinding is served at apiVersion "work.karmada.io/v1alpha2", not "work.karmada.io/v1alpha1"',
        id="builtin-kind-wrong-version",
    ),
    pytest.param(
        _with(CLUSTER, spec={"insecureSkipTlsVerification": True}),
        "spec.insecureSkipTlsVerification",
        "unknown field",
        id="json-name-is-case-sensitive",
    ),
    pytest.param(
        _with(CLUSTER, spec={"syncMode": "Push", "sync_mode": "Pull"}),
        "spec.sync_mode",
        "unknown field",
        id="proto-field-name-is-not-json",
    ),
]


@pytest.mark.parametrize(("document", "path", "reason"), MALFORMED)
def test_malformed_document_names_path_and_reason(document: dict[str, Any], path: str, reason: str) -> None:
    with pytest.raises(CodecError) as caught:
        codec.from_dict(document)
    assert caught.value.errors == [FieldError(path, reason)]
    assert str(caught.value) == f"{path}: {reason}"


def test_every_error_is_collected() -> None:
    document = _with(
        PP,
        spec={
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "nam": "x"}],
            "priority": "high",
            "placement": {"clusterAffinity": {"clusterNames": "member1"}, "replicaScheduling": []},
        },
        extra=1,
    )
    with pytest.raises(CodecError) as caught:
        codec.from_dict(document)
    # In document order.
    assert caught.value.errors == [
        FieldError("spec.resourceSelectors[0].nam", "unknown field"),
        FieldError("spec.priority", "expected integer, got string"),
        FieldError("spec.placement.clusterAffinity.clusterNames", "expected list, got string"),
        FieldError("spec.placement.replicaScheduling", "expected object, got list"),
        FieldError("extra", "unknown field"),
    ]


def test_parse_as_prefixes_paths() -> None:
    with pytest.raises(CodecError) as caught:
        codec.parse_as(policy_pb2.Placement, {"clusterTolerations": [{"operatr": "Exists"}]}, path="spec.placement")
    assert caught.value.errors == [FieldError("spec.placement.clusterTolerations[0].operatr", "unknown field")]


def test_not_an_object() -> None:
    with pytest.raises(CodecError) as caught:
        codec.from_dict(["apiVersion", "v1"])  # type: ignore[arg-type]
    assert caught.value.errors == [FieldError("", "expected object, got list")]


def test_enum_like_strings_are_not_validated_here() -> None:
    doc = _with(PP, spec={"placement": {"clusterTolerations": [{"key": "k", "operator": "Sometimes"}]}})
    assert codec.to_dict(codec.from_dict(doc)) == doc


def test_null_means_unset() -> None:
    doc = _with(PP, spec={"placement": None, "priority": None})
    assert codec.to_dict(codec.from_dict(doc)) == _with(PP, spec={})


# -- numbers ------------------------------------------------------------------


def test_int64_and_int32_print_as_numbers() -> None:
    toleration = meta_pb2.Toleration(key="k", operator="Exists", toleration_seconds=2**40)
    weight = policy_pb2.StaticClusterWeight(weight=2**35)
    meta = meta_pb2.ObjectMeta(name="x", generation=2**33)
    binding = work_pb2.ResourceBinding(
        spec=work_pb2.ResourceBindingSpec(replicas=3),
        status=work_pb2.ResourceBindingStatus(scheduler_observed_generation=7),
    )
    assert codec.to_dict(toleration)["tolerationSeconds"] == 2**40
    assert codec.to_dict(weight)["weight"] == 2**35
    assert codec.to_dict(meta)["generation"] == 2**33
    as_json = codec.to_json(binding)
    assert '"replicas":3' in as_json
    assert '"schedulerObservedGeneration":7' in as_json
    assert '"tolerationSeconds":1099511627776' in codec.to_json(toleration)


def test_int64_range_accepted_beyond_int32() -> None:
    doc = _with(PP, spec={"placement": {"clusterTolerations": [{"key": "k", "tolerationSeconds": 2**40}]}})
    msg = codec.from_dict(doc)
    assert msg.spec.placement.cluster_tolerations[0].toleration_seconds == 2**40


def test_optional_zero_is_kept_and_plain_zero_omitted() -> None:
    task = work_pb2.GracefulEvictionTask(from_cluster="m1", replicas=0, grace_period_seconds=0, suppress_deletion=False)
    assert codec.to_dict(task) == {
        "fromCluster": "m1",
        "replicas": 0,
        "gracePeriodSeconds": 0,
        "suppressDeletion": False,
    }
    assert codec.to_dict(meta_pb2.Toleration(key="k", toleration_seconds=0)) == {"key": "k", "tolerationSeconds": 0}
    assert codec.to_dict(work_pb2.TargetCluster(name="m1", replicas=0)) == {"name": "m1"}
    spec = policy_pb2.PropagationSpec(priority=0, suspension=policy_pb2.Suspension(dispatching=False))
    assert codec.to_dict(spec) == {"priority": 0, "suspension": {"dispatching": False}}


def test_optional_zero_survives_a_round_trip() -> None:
    doc = _with(
        PP,
        spec={
            "priority": 0,
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 0}, "gracePeriodSeconds": 0}},
            "placement": {"clusterTolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 0}]},
        },
    )
    assert codec.to_dict(codec.from_dict(doc)) == doc


def test_explicit_empty_objects_are_kept() -> None:
    doc = _with(PP, spec={"failover": {"application": {"decisionConditions": {}}}, "placement": {}})
    assert codec.to_dict(codec.from_dict(doc)) == doc


def test_empty_values_are_omitted() -> None:
    msg = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    msg.metadata.name = "b"
    msg.spec.scheduler_name = ""
    msg.spec.clusters.add(name="m1")
    del msg.spec.clusters[:]
    assert codec.to_dict(msg) == {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b"},
        "spec": {},
    }


def test_quantities_accept_numbers() -> None:
    doc = _with(RB, spec={"replicaRequirements": {"resourceRequest": {"cpu": 2, "memory": "128Mi"}}})
    msg = codec.from_dict(doc)
    assert dict(msg.spec.replica_requirements.resource_request) == {"cpu": "2", "memory": "128Mi"}


# -- timestamps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("2026-11-22T03:13:39Z", "2026-11-22T03:13:39Z"),
        ("2026-11-22T03:13:39.987654321Z", "2026-11-22T03:13:39Z"),
        ("2026-11-22T04:13:39+01:00", "2026-11-22T03:13:39Z"),
        ("2026-11-21T22:43:39.5-04:30", "2026-11-22T03:13:39Z"),
        ("2026-11-22t03:13:39z", "2026-11-22T03:13:39Z"),
    ],
)
def test_timestamps_parse_rfc3339_and_print_seconds(text: str, printed: str) -> None:
    doc = _with(CLUSTER, spec={"taints": [{"key": "a", "effect": "NoExecute", "timeAdded": text}]})
    assert codec.to_dict(codec.from_dict(doc))["spec"]["taints"][0]["timeAdded"] == printed


def test_timestamp_keeps_nanos_in_the_message() -> None:
    ts = codec.parse_time("2026-11-22T03:13:39.123456789Z")
    assert (ts.seconds, ts.nanos) == (1795317219, 123456789)
    assert codec.format_time(ts) == "2026-11-22T03:13:39Z"


def test_yaml_datetime_objects_are_accepted() -> None:
    doc = _with(RB, status={"lastScheduledTime": datetime(2026, 11, 22, 3, 13, 39, tzinfo=UTC)})
    assert codec.to_dict(codec.from_dict(doc))["status"]["lastScheduledTime"] == "2026-11-22T03:13:39Z"


def test_lease_times_are_micro_time() -> None:
    doc = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "member3", "namespace": "karmada-cluster"},
        "spec": {
            "holderIdentity": "member3",
            "leaseDurationSeconds": 40,
            "renewTime": "2026-11-22T03:13:39.250000Z",
            "leaseTransitions": 0,
        },
    }
    msg = codec.from_dict(doc)
    assert isinstance(msg, coordination_pb2.Lease)
    assert codec.to_dict(msg) == doc


def test_timestamp_wrong_type() -> None:
    with pytest.raises(CodecError) as caught:
        codec.from_dict(_with(RB, spec={"rescheduleTriggeredAt": 1700000000}))
    assert caught.value.errors == [FieldError("spec.rescheduleTriggeredAt", "expected timestamp string, got integer")]


# -- embedded JSON ------------------------------------------------------------


def test_unstructured_keeps_content_order_and_metadata() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default", "labels": {"tier": "config"}},
        "data": {"z": "1", "a": "2"},
        "immutable": True,
    }
    msg = codec.from_dict(doc)
    assert isinstance(msg, meta_pb2.Unstructured)
    assert msg.metadata.labels["tier"] == "config"
    assert msg.content == b'{"data":{"z":"1","a":"2"},"immutable":true}'
    out = codec.to_dict(msg)
    assert out == doc
    assert list(out) == ["apiVersion", "kind", "metadata", "data", "immutable"]
    assert list(out["data"]) == ["z", "a"]


def test_unquoted_yaml_timestamps_in_templates_stay_strings() -> None:
    text = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nstatus:\n  startTime: 2026-11-22T03:13:39Z\n"
    (document,) = codec.load_yaml_documents(text)
    assert document["status"]["startTime"] == "2026-11-22T03:13:39Z"
    assert codec.to_dict(codec.from_dict(document)) == document


def test_work_manifests_and_statuses_are_raw_json() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"}, "spec": {"replicas": 2}}
    doc = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "nginx-687f7fb96f", "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [deployment]}},
        "status": {
            "manifestStatuses": [
                {
                    "identifier": {"ordinal": 1, "group": "apps", "version": "v1", "kind": "Deployment", "name": "n"},
                    "status": {"readyReplicas": 2, "ratio": 0.5},
                    "health": "Healthy",
                }
            ]
        },
    }
    msg = codec.from_dict(doc)
    assert json.loads(msg.spec.workload.manifests[0]) == deployment
    out = codec.to_dict(msg)
    assert out == doc
    assert isinstance(out["status"]["manifestStatuses"][0]["status"]["readyReplicas"], int)


def test_aggregated_status_is_raw_json_and_bindings_share_types() -> None:
    status = {"aggregatedStatus": [{"clusterName": "m1", "status": {"replicas": 3}, "applied": True}]}
    rb = codec.from_dict(_with(RB, status=status))
    crb = codec.from_dict(
        {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding", "metadata": {"name": "c"}}
    )
    assert type(rb.status) is type(crb.status)
    assert type(rb.spec) is type(crb.spec)
    assert json.loads(rb.status.aggregated_status[0].status) == {"replicas": 3}


def test_embedded_json_rejects_non_json_values() -> None:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {1: "x", "n": float("nan")}}
    with pytest.raises(CodecError) as caught:
        codec.from_dict(doc)
    assert caught.value.errors == [
        FieldError("data.1", "expected string key, got integer"),
        FieldError("data.n", "expected a finite number, got nan"),
    ]


def test_bytes_field_without_json_is_a_programming_error() -> None:
    item = work_pb2.AggregatedStatusItem(cluster_name="m1", status=b"not json")
    with pytest.raises(ValueError, match="status: bytes field does not hold JSON"):
        codec.to_dict(item)


# -- YAML text ----------------------------------------------------------------


def test_load_yaml_documents_skips_empty_documents() -> None:
    text = "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\n"
    assert codec.load_yaml_documents(text) == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]


def test_load_yaml_documents_rejects_scalars_and_bad_yaml() -> None:
    with pytest.raises(CodecError, match="document 2: expected object, got list"):
        codec.load_yaml_documents("a: 1\n---\n- x\n")
    with pytest.raises(CodecError, match=r"invalid YAML: line 3 column 1: "):
        codec.load_yaml_documents("a: [1,\nb: 2\n")


def test_duplicate_keys_are_an_error() -> None:
    with pytest.raises(CodecError, match='duplicate key "name"'):
        codec.load_yaml_documents("metadata:\n  name: a\n  name: b\n")


def test_to_yaml_prints_scripts_as_blocks_and_dumps_many() -> None:
    (document,) = codec.load_yaml_documents(HEALTH_INTERPRETER)
    text = codec.to_yaml(codec.from_dict(document))
    assert "luaScript: |\n" in text
    both = codec.dump_yaml_documents([codec.from_dict(document), document])
    assert codec.load_yaml_documents(both) == [document, document]


def test_from_json() -> None:
    document = _with(CLUSTER, spec={"syncMode": "Push", "taints": [{"key": "k", "effect": "NoSchedule"}]})
    msg = codec.from_json(codec.to_json(codec.from_dict(document), indent=2))
    assert codec.to_dict(msg) == document
    with pytest.raises(CodecError, match="invalid JSON"):
        codec.from_json("{")
