"""Karmada's FlinkDeployment customization (examples/flink-customization.yaml, unchanged) on
Karmada's own test data (tests/interpreter_cases/flink/, copied from karmada-io/karmada
pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/flink.apache.org/v1beta1/
FlinkDeployment/testdata): GetReplicas, ReflectStatus, AggregateStatus and InterpretHealth give
what Karmada's tests expect; and a script without a usable answer gives an error, never a number."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec, registry
from flotilla.api.v1 import work_pb2
from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.interpreter.customized import (
    AGGREGATE_STATUS,
    GET_COMPONENTS,
    GET_REPLICAS,
    REFLECT_STATUS,
    REVISE_REPLICA,
    CustomizedInterpreter,
)
from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.health import HealthInterpreter
from flotilla.interpreter.pool import ERROR, OK, CallResult
from flotilla.interpreter.sandbox import LuaSandbox
from flotilla.store.informer import Informer
from flotilla.store.memory import MemoryStore
from services.executor.execution import ExecutionReconciler
from services.executor.member_writes import RetainFailed, apply_owned
from services.executor.work_status import manifest_statuses
from services.webhook.rules.interpreter import validate_interpreter_customization
from tests.factories import EXAMPLES_DIR

CASES = Path(__file__).resolve().parents[1] / "interpreter_cases" / "flink"


class InProcess:
    """A ScriptRunner in this process (the scripts here are trusted; the services use ScriptPool)."""

    def __init__(self) -> None:
        self.sandbox = LuaSandbox()
        self.calls = 0

    async def call(self, script: str, function: str, arguments: Sequence[Any],
                   timeout: float | None = None) -> CallResult:
        self.calls += 1
        try:
            chunk = self.sandbox.compile(script)
            return CallResult(OK, self.sandbox.call(chunk, function, arguments, timeout or 1.0))
        except InterpretationError as error:
            return CallResult(ERROR, error=str(error))


def flink_customization() -> ResourceInterpreterCustomization:
    documents = codec.load_yaml_documents((EXAMPLES_DIR / "flink-customization.yaml").read_text())
    customization = codec.from_dict(documents[0])
    assert isinstance(customization, ResourceInterpreterCustomization)
    return customization


def cases(name: str) -> list[Any]:
    return [case for case in codec.load_yaml_documents((CASES / name).read_text()) if case]


def pruned(value: Any) -> Any:
    """Without empty objects and lists: an empty Lua table has no JSON type (Karmada's
    conversion drops it, this one keeps it as {})."""
    if isinstance(value, dict):
        kept = {k: pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def interpreter() -> CustomizedInterpreter:
    return CustomizedInterpreter([flink_customization()], runner=InProcess())


def test_the_flink_customization_has_every_script_flotilla_runs() -> None:
    flink = interpreter()
    target = ("flink.apache.org/v1beta1", "FlinkDeployment")
    assert flink.has(GET_REPLICAS, *target) and flink.has(GET_COMPONENTS, *target)
    assert flink.has(REFLECT_STATUS, *target) and flink.has(AGGREGATE_STATUS, *target)
    # Karmada's FlinkDeployment has no replicaRevision: each cluster's copy is the whole object.
    assert not flink.has(REVISE_REPLICA, *target)
    assert not flink.has(GET_REPLICAS, "apps/v1", "Deployment")


@pytest.mark.parametrize("case", cases("interpretreplica-test.yaml"), ids=lambda c: c["name"])
async def test_get_replicas_as_karmada_tests_it(case: dict[str, Any]) -> None:
    answer = await interpreter().get_replicas(case["desiredObj"])
    assert answer.ok, answer.error
    assert answer.customization == "declarative-configuration-flinkdeployment"
    assert answer.value.replicas == case["output"]["replica"]
    assert codec.to_dict(answer.value.requirements) == case["output"]["requires"]


@pytest.mark.parametrize("case", cases("interpretcomponent-test.yaml"), ids=lambda c: c["name"])
async def test_get_components_as_karmada_tests_it(case: dict[str, Any]) -> None:
    answer = await interpreter().get_components(case["desiredObj"])
    assert answer.ok, answer.error
    assert [codec.to_dict(c) for c in answer.value] == case["output"]["components"]


@pytest.mark.parametrize(("body", "expected"), [
    ("return nil", []),
    ("return {}", []),
    ("return {{name = 'a', replicas = 2}, {name = 'b', replicas = 0.0}}",
     [{"name": "a", "replicas": 2}, {"name": "b"}]),
])
async def test_get_components_reads_karmadas_shapes(body: str, expected: list[Any]) -> None:
    script = f"function GetComponents(obj)\n  {body}\nend"
    answer = await CustomizedInterpreter([customization("componentResource", script)],
                                         runner=InProcess()).get_components(WIDGET)
    assert answer.ok, answer.error
    assert [codec.to_dict(c) for c in answer.value] == expected


@pytest.mark.parametrize(("body", "error"), [
    ("return 3", "returned a number, not a list of components"),
    ("return {{replicas = 1}}", "component 1: name is required"),
    ("return {{name = string.rep('a', 33), replicas = 1}}", "longer than 32 characters"),
    ("return {{name = 'a', replicas = 1}, {name = 'a', replicas = 1}}", "component 2: name 'a' is used twice"),
    ("return {{name = 'a'}}", "component 1: replicas is required"),
    ("return {{name = 'a', replicas = 1.5}}", "replicas 1.5 is not a whole number"),
    ("return {{name = 'a', replicas = -1}}", "replicas -1 is not a whole number"),
    ("return {{name = 'a', replicas = 1, replicaRequirements = 'big'}}", "replicaRequirements is not a table"),
])
async def test_get_components_without_a_usable_answer_is_an_error(body: str, error: str) -> None:
    script = f"function GetComponents(obj)\n  {body}\nend"
    answer = await CustomizedInterpreter([customization("componentResource", script)],
                                         runner=InProcess()).get_components(WIDGET)
    assert not answer.ok and error in answer.error, answer.error


@pytest.mark.parametrize("case", cases("interpretstatus-test.yaml"), ids=lambda c: c["name"])
async def test_reflect_status_as_karmada_tests_it(case: dict[str, Any]) -> None:
    answer = await interpreter().reflect_status(case["observedObj"])
    assert answer.ok, answer.error
    assert pruned(answer.value) == pruned(case["output"]["status"])


@pytest.mark.parametrize("case", cases("aggregatestatus-test.yaml"), ids=lambda c: c["name"])
async def test_aggregate_status_as_karmada_tests_it(case: dict[str, Any]) -> None:
    answer = await interpreter().aggregate_status(case["desiredObj"], case.get("statusItems") or [])
    assert answer.ok, answer.error
    assert pruned(answer.value) == pruned(case["output"]["aggregatedStatus"])


@pytest.mark.parametrize("case", cases("interprethealth-test.yaml"), ids=lambda c: c["name"])
async def test_health_as_karmada_tests_it(case: dict[str, Any]) -> None:
    health = HealthInterpreter([flink_customization()], runner=InProcess())
    result = await health.interpret(case["observedObj"])
    assert result.health == ("Healthy" if case["output"]["healthy"] else "Unhealthy"), result.error


def customization(operation: str, script: str, kind: str = "Widget") -> ResourceInterpreterCustomization:
    return codec.parse_as(ResourceInterpreterCustomization, {
        "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "widgets"},
        "spec": {"target": {"apiVersion": "example.io/v1", "kind": kind},
                 "customizations": {operation: {"luaScript": script}}}})


WIDGET = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 4}}


@pytest.mark.parametrize(("body", "error"), [
    ("return nil", "replica is a nil, not a number"),
    ("return 'three'", "replica is a string, not a number"),
    ("return 2.5", "replica 2.5 is not a whole number of replicas"),
    ("return -1", "replica -1 is not a whole number of replicas"),
    ("return 3, 'big'", "requirement is a string, not a table"),
    ("error('no size')", "no size"),
    ("return 3, {resourceRequest = {cpu = true}}", "resourceRequest.cpu is not a quantity"),
])
async def test_get_replicas_without_a_usable_answer_is_an_error_not_a_number(body: str, error: str) -> None:
    script = f"function GetReplicas(obj)\n  {body}\nend"
    answer = await CustomizedInterpreter([customization("replicaResource", script)],
                                         runner=InProcess()).get_replicas(WIDGET)
    assert not answer.ok and answer.value is None
    assert error in answer.error


async def test_get_replicas_converts_number_quantities_as_kubernetes_writes_them() -> None:
    script = ("function GetReplicas(obj)\n  return obj.spec.size, {resourceRequest = {cpu = 0.5, memory = 2^30},"
              " priorityClassName = 'high'}\nend")
    answer = await CustomizedInterpreter([customization("replicaResource", script)],
                                         runner=InProcess()).get_replicas(WIDGET)
    assert answer.ok, answer.error
    assert answer.value.replicas == 4
    assert codec.to_dict(answer.value.requirements) == {
        "resourceRequest": {"cpu": "500m", "memory": "1Gi"}, "priorityClassName": "high"}


async def test_a_script_that_does_not_compile_fails_without_running() -> None:
    runner = InProcess()
    flink = CustomizedInterpreter([customization("replicaResource", "function GetReplicas(obj")], runner=runner)
    answer = await flink.get_replicas(WIDGET)
    assert "Lua script does not compile" in answer.error
    assert runner.calls == 0


async def test_without_a_runner_a_kind_with_a_script_is_not_interpreted_natively() -> None:
    flink = CustomizedInterpreter([customization("replicaResource", "function GetReplicas(o) return 1 end")])
    answer = await flink.get_replicas(WIDGET)
    assert not answer.ok and "no script runner" in answer.error


async def test_revise_replica_returns_the_revised_object() -> None:
    script = "function ReviseReplica(obj, desired)\n  obj.spec.size = desired\n  return obj\nend"
    answer = await CustomizedInterpreter([customization("replicaRevision", script)],
                                         runner=InProcess()).revise_replica(WIDGET, 2)
    assert answer.ok and answer.value["spec"] == {"size": 2}


async def test_the_first_customization_by_name_wins() -> None:
    first = customization("replicaResource", "function GetReplicas(o) return 1 end")
    second = customization("replicaResource", "function GetReplicas(o) return 2 end")
    first.metadata.name, second.metadata.name = "b", "a"
    answer = await CustomizedInterpreter([first, second], runner=InProcess()).get_replicas(WIDGET)
    assert (answer.value.replicas, answer.customization) == (2, "a")


def test_kube_get_resource_quantity_reads_kubernetes_quantities() -> None:
    sandbox = LuaSandbox()
    chunk = sandbox.compile('local kube = require("kube")\nfunction F(q) return kube.getResourceQuantity(q) end')
    for quantity, value in (("2Gi", 2**31), ("500m", 0.5), ("2048m", 2.048), ("1e3", 1000), ("3k", 3000), (2, 2)):
        assert sandbox.call(chunk, "F", [quantity], 1.0)[0].value == pytest.approx(value)
    with pytest.raises(InterpretationError, match="quantities must match"):
        sandbox.call(chunk, "F", ["lots"], 1.0)


# -- statusReflection in the Work's manifestStatuses (services/executor/work_status.py) ------------


def flink_work(observed: dict[str, Any]) -> tuple[Any, dict[Any, Any]]:
    manifest = {key: observed[key] for key in ("apiVersion", "kind")}
    manifest["metadata"] = {"name": observed["metadata"]["name"], "namespace": observed["metadata"]["namespace"]}
    work = work_pb2.Work()
    work.spec.workload.manifests.append(codec.raw_json(manifest))
    key = (observed["apiVersion"], observed["kind"], observed["metadata"]["namespace"], observed["metadata"]["name"])
    return work, {key: observed}


async def test_a_work_records_the_reflected_status() -> None:
    observed = cases("interpretstatus-test.yaml")[0]["observedObj"]
    observed = {**observed, "status": {**observed["status"], "notReflected": "dropped"}}
    work, members = flink_work(observed)
    reflect_errors: list[str] = []
    statuses, missing, errors = await manifest_statuses(
        work, members, HealthInterpreter([flink_customization()], runner=InProcess()), interpreter(), reflect_errors)
    assert (missing, errors, reflect_errors) == ([], [], [])
    recorded = codec.load_json(statuses[0].status)
    assert "notReflected" not in recorded
    assert pruned(recorded) == pruned(cases("interpretstatus-test.yaml")[0]["output"]["status"])
    assert statuses[0].health == "Healthy"


async def test_a_status_that_cannot_be_reflected_is_recorded_empty_with_the_error() -> None:
    broken = customization("statusReflection", "function ReflectStatus(obj)\n  error('no status here')\nend")
    widget = {**WIDGET, "metadata": {"name": "w", "namespace": "default"}, "status": {"ready": 3}}
    work, members = flink_work(widget)
    reflect_errors: list[str] = []
    statuses, _, _ = await manifest_statuses(work, members, HealthInterpreter(),
                                             CustomizedInterpreter([broken], runner=InProcess()), reflect_errors)
    assert codec.load_json(statuses[0].status) == {}
    (error,) = reflect_errors
    assert "Widget default/w" in error and "widgets" in error and "no status here" in error


async def test_without_a_reflection_script_the_status_is_recorded_as_it_is() -> None:
    widget = {**WIDGET, "metadata": {"name": "w", "namespace": "default"}, "status": {"ready": 3}}
    work, members = flink_work(widget)
    statuses, _, _ = await manifest_statuses(work, members, HealthInterpreter(), interpreter(), [])
    assert codec.load_json(statuses[0].status) == {"ready": 3}


# -- retention before a member object is written over (services/executor/execution.py) -------------


class Member:
    """A member holding one object Flotilla applied before, whose controller has since set spec.replicas."""

    server = "https://member1.example:6443"

    def __init__(self, observed: dict[str, Any]) -> None:
        self.observed = observed
        self.applied: list[dict[str, Any]] = []

    async def get(self, *_: Any) -> dict[str, Any] | None:
        return self.observed

    async def apply(self, body: dict[str, Any], resource_version: str | None = None) -> dict[str, Any]:
        self.applied.append(body)
        return body


def owned_widget(**spec: Any) -> dict[str, Any]:
    labels = {"resourcebinding.karmada.io/permanent-id": "b-1"}
    return {**WIDGET, "metadata": {"name": "w", "namespace": "default", "labels": labels}, "spec": spec}


def execution(retainer: CustomizedInterpreter) -> ExecutionReconciler:
    store = MemoryStore()
    return ExecutionReconciler(store, FakeClock(), Informer(store, registry.WORK), Informer(store, registry.CLUSTER),
                               connect=None, serves=lambda _: True, retainer=retainer)  # type: ignore[arg-type]


async def test_retain_keeps_what_the_member_set_when_the_object_is_written_over() -> None:
    script = ("function Retain(desired, observed)\n  desired.spec.replicas = observed.spec.replicas\n"
              "  return desired\nend")
    reconciler = execution(CustomizedInterpreter([customization("retention", script)], runner=InProcess()))
    desired = owned_widget(size=4)
    member = Member({**owned_widget(size=3, replicas=7), "metadata": {
        **owned_widget()["metadata"], "resourceVersion": "12"}})
    await apply_owned(member, desired, "member1", "karmada-es-member1", "w",  # type: ignore[arg-type]
                      reconciler._retain_for(desired))
    (written,) = member.applied
    assert written["spec"] == {"size": 4, "replicas": 7}
    assert written["metadata"]["labels"]["karmada.io/managed"] == "true"
    # Nothing to retain from when the object is new: the desired object as it is.
    new = Member(None)  # type: ignore[arg-type]
    await apply_owned(new, desired, "member1", "karmada-es-member1", "w",  # type: ignore[arg-type]
                      reconciler._retain_for(desired))
    assert new.applied[0]["spec"] == {"size": 4}
    assert reconciler._retain_for({"apiVersion": "apps/v1", "kind": "Deployment"}) is None


async def test_a_failing_retain_writes_nothing() -> None:
    script = "function Retain(desired, observed)\n  return nil\nend"
    reconciler = execution(CustomizedInterpreter([customization("retention", script)], runner=InProcess()))
    desired = owned_widget(size=4)
    member = Member({**owned_widget(size=3, replicas=7), "metadata": {
        **owned_widget()["metadata"], "resourceVersion": "12"}})
    with pytest.raises(RetainFailed, match="Retain returned a nil, not an object"):
        await apply_owned(member, desired, "member1", "karmada-es-member1", "w",  # type: ignore[arg-type]
                          reconciler._retain_for(desired))
    assert member.applied == []


# -- dependencyInterpretation ----------------------------------------------------------------------


@pytest.mark.parametrize(("body", "expected"), [
    ("return {{apiVersion = 'v1', kind = 'Secret', name = 's'}}", [("v1", "Secret", "default", "s")]),
    ("return {{apiVersion = 'v1', kind = 'Secret', namespace = 'default', name = 's'},"
     " {apiVersion = 'v1', kind = 'ConfigMap', name = 'c'}}",
     [("v1", "Secret", "default", "s"), ("v1", "ConfigMap", "default", "c")]),
    ("return {}", []),
    ("return nil", []),
])
async def test_get_dependencies_names_the_workloads_dependents(body: str, expected: list[Any]) -> None:
    script = f"function GetDependencies(obj)\n  {body}\nend"
    widget = {**WIDGET, "metadata": {"name": "w", "namespace": "default"}}
    answer = await CustomizedInterpreter([customization("dependencyInterpretation", script)],
                                         runner=InProcess()).get_dependencies(widget)
    assert answer.ok, answer.error
    assert answer.value == expected


@pytest.mark.parametrize(("body", "error"), [
    ("return 'secret'", "returned a string, not a list of dependencies"),
    ("return {{apiVersion = 'v1', kind = 'Secret'}}", "dependency 1 needs apiVersion, kind and name"),
    ("return {{apiVersion = 'v1', kind = 'Secret', labelSelector = {matchLabels = {a = 'b'}}}}",
     "labelSelector is not supported by Flotilla"),
    ("return {{apiVersion = 'v1', kind = 'Secret', namespace = 'other', name = 's'}}",
     "is in namespace 'other', not the workload's"),
])
async def test_get_dependencies_without_a_usable_answer_is_an_error(body: str, error: str) -> None:
    script = f"function GetDependencies(obj)\n  {body}\nend"
    widget = {**WIDGET, "metadata": {"name": "w", "namespace": "default"}}
    answer = await CustomizedInterpreter([customization("dependencyInterpretation", script)],
                                         runner=InProcess()).get_dependencies(widget)
    assert not answer.ok and error in answer.error


# -- admission ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["replicaResource", "replicaRevision", "statusReflection", "statusAggregation",
                                   "retention", "dependencyInterpretation", "componentResource"])
def test_admission_compiles_each_customization_and_names_its_field(field: str) -> None:
    errors = list(validate_interpreter_customization(customization(field, "function F(obj)\n  return 1\n")))
    assert [e.path for e in errors] == [f"spec.customizations.{field}.luaScript"]
    assert "Lua script does not compile" in errors[0].reason and "'end' expected" in errors[0].reason
    assert list(validate_interpreter_customization(customization(field, "function F(obj) return 1 end"))) == []
