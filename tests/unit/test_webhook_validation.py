"""Validating admission: every invalid case is refused at the right field, every seed example is accepted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from flotilla.api import codec
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.api.v1.policy_pb2 import PropagationPolicy
from flotilla.api.wellknown import PP_PERMANENT_ID_LABEL
from flotilla.rules.jsonpath_template import jsonpath_template_problem
from services.webhook.defaulting import AdmissionConfig
from services.webhook.rules.lua import lua_compile_error
from services.webhook.validation import validate_object
from tests.admission_cases import (
    AFFINITIES,
    APP_FAILOVER,
    CLUSTER,
    DIVIDED,
    INVALID_CASES,
    TAINT_POLICY,
    VALID_BASES,
    admit,
    parse_document,
)
from tests.factories import EXAMPLE_FILES

NOW = datetime(2026, 11, 22, 3, 13, 39, tzinfo=UTC)
ID_LABEL = PP_PERMANENT_ID_LABEL
PERMANENT_ID_PATH = f"metadata.labels[{PP_PERMANENT_ID_LABEL}]"


def paths(errors: list[codec.FieldError]) -> list[str]:
    return [e.path for e in errors]


@pytest.mark.parametrize(("case_id", "text", "path", "reason"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES])
def test_invalid_document_is_rejected_at_its_field(case_id: str, text: str, path: str, reason: str) -> None:
    _, errors = admit(parse_document(text), now=NOW)
    assert errors, f"{case_id} was accepted"
    assert errors[0].path == path, errors
    assert reason in errors[0].reason, errors


def test_the_table_covers_enough_cases_with_unique_ids() -> None:
    ids = [c[0] for c in INVALID_CASES]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(("name", "text"), VALID_BASES, ids=[b[0] for b in VALID_BASES])
def test_every_base_of_the_invalid_cases_is_valid(name: str, text: str) -> None:
    obj, errors = admit(parse_document(text), now=NOW)
    assert obj is not None and errors == []


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_seed_example_is_accepted(path: Path) -> None:
    for doc in codec.load_yaml_documents(path.read_text()):
        obj, errors = admit(doc, now=NOW)
        assert obj is not None and errors == [], f"{doc['kind']}/{doc['metadata']['name']}: {errors}"


def test_all_errors_are_reported_at_once() -> None:
    text = DIVIDED.replace("operator: Exists", "operator: Lt").replace("weight: 2", "weight: 0")
    text = text.replace("minGroups: 1", "minGroups: -1")
    _, errors = admit(parse_document(text), now=NOW)
    assert paths(errors) == [
        "spec.placement.clusterTolerations[0].operator",
        "spec.placement.spreadConstraints[0].minGroups",
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[1].weight",
    ]


# -- UPDATE ---------------------------------------------------------------------------------------


def stored(text: str) -> PropagationPolicy:
    obj, errors = admit(parse_document(text), now=NOW)
    assert isinstance(obj, PropagationPolicy) and errors == []
    return obj


def test_reapplying_the_same_document_is_an_accepted_no_op() -> None:
    old = stored(DIVIDED)
    obj, errors = admit(parse_document(DIVIDED), old=old, now=NOW)
    assert errors == []
    assert obj == old


def test_scheduler_name_cannot_change() -> None:
    old = stored(DIVIDED)
    changed = DIVIDED.replace("spec:\n", "spec:\n  schedulerName: my-scheduler\n")
    _, errors = admit(parse_document(changed), old=old, now=NOW)
    assert [str(e) for e in errors] == ["spec.schedulerName: the schedulerName should not be updated"]


def test_scheduler_name_may_be_set_on_create() -> None:
    text = DIVIDED.replace("spec:\n", "spec:\n  schedulerName: my-scheduler\n")
    assert admit(parse_document(text), now=NOW)[1] == []


def test_permanent_id_cannot_change() -> None:
    old = stored(DIVIDED)
    doc = parse_document(DIVIDED)
    doc["metadata"]["labels"] = {ID_LABEL: "another-id"}
    _, errors = admit(doc, old=old, now=NOW)
    assert paths(errors) == [PERMANENT_ID_PATH]
    assert "immutable" in errors[0].reason


def test_permanent_id_left_out_of_an_update_is_kept_not_refused() -> None:
    old = stored(DIVIDED)
    obj, errors = admit(parse_document(DIVIDED), old=old, now=NOW)
    assert errors == []
    assert isinstance(obj, PropagationPolicy)
    assert obj.metadata.labels[ID_LABEL] == old.metadata.labels[ID_LABEL]


def test_permanent_id_is_required() -> None:
    obj, _ = admit(parse_document(DIVIDED), now=NOW)
    assert isinstance(obj, PropagationPolicy)
    del obj.metadata.labels[ID_LABEL]
    errors = validate_object(obj, None, AdmissionConfig())
    assert [str(e) for e in errors] == [f"{PERMANENT_ID_PATH}: required"]


# -- configuration and scope ----------------------------------------------------------------------


def test_no_execute_taint_policy_needs_the_flag() -> None:
    refused = AdmissionConfig(allow_no_execute_taint_policy=False)
    _, errors = admit(parse_document(TAINT_POLICY), config=refused, now=NOW)
    assert paths(errors) == ["spec.taints[0].effect"]
    assert "NoExecute effect is not allowed" in errors[0].reason
    assert admit(parse_document(TAINT_POLICY), now=NOW)[1] == []
    no_schedule = TAINT_POLICY.replace("effect: NoExecute", "effect: NoSchedule")
    assert admit(parse_document(no_schedule), config=refused, now=NOW)[1] == []


def test_namespaced_kinds_need_a_namespace() -> None:
    obj, _ = admit(parse_document(DIVIDED), now=NOW)
    assert obj is not None
    obj.metadata.namespace = ""  # type: ignore[attr-defined]
    errors = validate_object(obj, None, AdmissionConfig())
    assert [str(e) for e in errors] == ["metadata.namespace: required"]


def test_cluster_names_must_fit_the_execution_namespace() -> None:
    long_name = "m" * 49
    _, errors = admit(parse_document(CLUSTER.replace("name: member1", f"name: {long_name}")), now=NOW)
    assert [str(e) for e in errors] == [
        f'metadata.name: invalid value "{long_name}": must be no more than 48 characters'
    ]


def test_rbac_templates_keep_their_colon_names() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:controller:flotilla"},
        "rules": [],
    }
    assert admit(role, now=NOW)[1] == []


def test_template_without_api_version_built_in_code() -> None:
    template = Unstructured(kind="Deployment")
    template.metadata.name = "nginx"
    assert paths(validate_object(template, None, AdmissionConfig())) == ["apiVersion"]


def test_overflow_affinities_with_dynamic_weight_are_accepted() -> None:
    text = AFFINITIES.replace(
        "          - member3\n",
        "          - member3\n        overflowAffinities:\n          - affinityName: spill\n"
        "            clusterNames:\n              - member4\n",
    )
    assert admit(parse_document(text), now=NOW)[1] == []


def test_deprecated_purge_modes_are_accepted() -> None:
    text = APP_FAILOVER.replace("purgeMode: Gracefully", "purgeMode: Graciously")
    assert admit(parse_document(text), now=NOW)[1] == []
    text = APP_FAILOVER.replace("purgeMode: Gracefully\n      gracePeriodSeconds: 600\n", "purgeMode: Immediately\n")
    assert admit(parse_document(text), now=NOW)[1] == []


# -- JSONPath templates and Lua scripts -----------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "{ .jobStatus.jobID }",
        "{.replicas}",
        "{$.status.phase}",
        "{.items[0].name}",
        '{.conditions[?(@.type=="Ready")].status}',
        "{.metadata.labels['app.kubernetes.io/name']}",
    ],
)
def test_jsonpath_template_accepted(template: str) -> None:
    assert jsonpath_template_problem(template) is None


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        (".jobStatus.jobID", "in braces"),
        ("{.a}{.b}", "single JSONPath expression"),
        ("job-{.a}", "in braces"),
        ("{ .a", "unbalanced braces"),
        (".a }", "unbalanced braces"),
        ("{{.a}}", "unbalanced braces"),
        ("{}", "empty JSONPath expression"),
        ("{jobStatus}", "must start with"),
        ("{.a[}", "invalid JSONPath expression"),
        ("{.a b}", "invalid JSONPath expression"),
        ("{.a['b}", "unterminated quote"),
    ],
)
def test_jsonpath_template_refused(template: str, problem: str) -> None:
    found = jsonpath_template_problem(template)
    assert found is not None and problem in found


def test_lua_compiles_without_running() -> None:
    # Running this would raise; compiling it must not.
    assert lua_compile_error("error('ran')\nfunction InterpretHealth(o) return true end") is None


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ("function InterpretHealth(o) return o.a // 2 end", "luaScript:1:"),
        ("function InterpretHealth(o)\n  return true\n", "'end' expected"),
        ("\x1bLua\x51\x00", "bytecode"),
    ],
    ids=["lua53-floor-division", "missing-end", "bytecode"],
)
def test_lua_that_gopher_lua_would_not_compile_is_refused(script: str, problem: str) -> None:
    found = lua_compile_error(script)
    assert found is not None and problem in found
