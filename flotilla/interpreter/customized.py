"""ResourceInterpreterCustomization scripts other than health: replicas, revision, status.

Karmada's declarative interpreter (`pkg/resourceinterpreter/customized/declarative`) runs, for a
kind with a customization:
- `GetReplicas(obj) -> replica, requirement` (replicaResource): the replicas a binding divides
  and what one replica needs;
- `ReviseReplica(obj, desiredReplica) -> obj` (replicaRevision): a member's copy with its share;
- `ReflectStatus(obj) -> status` (statusReflection): what a Work records of a member's object;
- `AggregateStatus(desired, statusItems) -> obj` (statusAggregation): the template with the
  members' statuses aggregated;
- `Retain(desired, observed) -> desired` (retention): the object to write over a member's,
  keeping what the member's own controllers set;
- `GetDependencies(obj) -> [{apiVersion, kind, namespace, name}]` (dependencyInterpretation):
  what propagateDeps sends along with the workload;
- `GetComponents(obj) -> [{name, replicas, replicaRequirements}]` (componentResource): the pod
  templates of a multi-component workload, read (as in Karmada) only under the feature gate
  MultiplePodTemplatesScheduling.

Every call runs in the service's ScriptPool (flotilla.interpreter.pool), like health: a script
can hang in one C call that only killing its worker stops. Nothing here falls back to a guess
when a script fails: callers get the error and keep what they had (a binding keeps its
replicas, a status reads empty with the error), because acting on a wrong number (0 replicas,
a whole copy of a divided workload per cluster) is worse than acting late.

Rules are picked as Karmada's config manager does (and health.py): customizations in name
order, the first non-empty script of an operation for a target (apiVersion, kind) wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flotilla.api import codec
from flotilla.api.v1 import core_pb2, meta_pb2, work_pb2
from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.interpreter.lua import compile_failure, lua_compile_error
from flotilla.interpreter.pool import ScriptRunner
from flotilla.interpreter.sandbox import LuaValue
from flotilla.member.quantity import Format, format_quantity

__all__ = [
    "AGGREGATE_STATUS",
    "GET_COMPONENTS",
    "GET_DEPENDENCIES",
    "GET_REPLICAS",
    "REFLECT_STATUS",
    "RETAIN",
    "REVISE_REPLICA",
    "CustomizedInterpreter",
    "Interpreted",
    "ReplicaResource",
]

# Proto field of CustomizationRules -> the Lua function Karmada calls.
GET_REPLICAS = "GetReplicas"
REVISE_REPLICA = "ReviseReplica"
REFLECT_STATUS = "ReflectStatus"
AGGREGATE_STATUS = "AggregateStatus"
RETAIN = "Retain"
GET_DEPENDENCIES = "GetDependencies"
GET_COMPONENTS = "GetComponents"
OPERATIONS = {
    "retention": RETAIN,
    "dependency_interpretation": GET_DEPENDENCIES,
    "replica_resource": GET_REPLICAS,
    "replica_revision": REVISE_REPLICA,
    "status_reflection": REFLECT_STATUS,
    "status_aggregation": AGGREGATE_STATUS,
    "component_resource": GET_COMPONENTS,
}
# Karmada's replica is an int32.
_MAX_REPLICAS = 2**31 - 1
# Karmada's Component.name: required, at most 32 characters, unique within the workload.
_MAX_COMPONENT_NAME = 32
_BINARY_RESOURCES = ("memory", "ephemeral-storage")


@dataclass(frozen=True, slots=True)
class ReplicaResource:
    replicas: int
    requirements: work_pb2.ReplicaRequirements | None


@dataclass(frozen=True, slots=True)
class Interpreted:
    """A script's answer: `value`, or why there is none (`error`, never both).

    `customization` names the ResourceInterpreterCustomization for the caller's Event."""

    value: Any = None
    error: str = ""
    customization: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True, slots=True)
class _Rule:
    script: str
    customization: str
    compile_error: str


class CustomizedInterpreter:
    """The customizations' scripts by operation and target; `runner` runs them (without one, every
    call fails: a kind with a script is never interpreted natively instead, as in Karmada)."""

    def __init__(self, customizations: Iterable[ResourceInterpreterCustomization] = (), *,
                 runner: ScriptRunner | None = None, timeout: float | None = None) -> None:
        self._runner = runner
        self._timeout = timeout
        self._rules: dict[tuple[str, str, str], _Rule] = {}
        self._compiled: dict[str, str] = {}
        self.set_customizations(customizations)

    def set_customizations(self, customizations: Iterable[ResourceInterpreterCustomization]) -> None:
        """Replace the customizations (the RIC informer's list); new scripts are compiled once here."""
        compiled: dict[str, str] = {}
        rules: dict[tuple[str, str, str], _Rule] = {}
        for customization in sorted(customizations, key=lambda c: c.metadata.name):
            spec = customization.spec
            for field, function in OPERATIONS.items():
                if not spec.customizations.HasField(field):
                    continue
                script = getattr(spec.customizations, field).lua_script
                key = (function, spec.target.api_version, spec.target.kind)
                if not script or key in rules:
                    continue
                error = compiled.get(script, self._compiled.get(script))
                if error is None:
                    message = lua_compile_error(script)
                    error = compile_failure(message) if message is not None else ""
                compiled[script] = error
                rules[key] = _Rule(script, customization.metadata.name, error)
        self._rules, self._compiled = rules, compiled

    def has(self, function: str, api_version: str, kind: str) -> bool:
        """Whether the kind has a script for `function` (GET_REPLICAS, ...)."""
        return (function, api_version, kind) in self._rules

    async def _call(self, function: str, obj: Mapping[str, Any], arguments: Sequence[Any]) -> tuple[
            tuple[LuaValue, ...], str, str]:
        rule = self._rules.get((function, obj.get("apiVersion", ""), obj.get("kind", "")))
        if rule is None:
            return (), f"no {function} script for this kind", ""
        if rule.compile_error:
            return (), rule.compile_error, rule.customization
        if self._runner is None:
            return (), f"Lua {function} scripts are not run here: no script runner", rule.customization
        result = await self._runner.call(rule.script, function, arguments, self._timeout)
        if not result.ok:
            return (), result.error, rule.customization
        return result.values, "", rule.customization

    async def get_replicas(self, obj: Mapping[str, Any]) -> Interpreted:
        """`GetReplicas(obj)`: a ReplicaResource, or the error (never a guessed count)."""
        values, error, name = await self._call(GET_REPLICAS, obj, [obj])
        if error:
            return Interpreted(error=error, customization=name)
        try:
            return Interpreted(replica_resource(values), customization=name)
        except ValueError as e:  # CodecError is one too
            return Interpreted(error=f"{GET_REPLICAS}: {e}", customization=name)

    async def revise_replica(self, obj: Mapping[str, Any], replicas: int) -> Interpreted:
        """`ReviseReplica(obj, replicas)`: the revised object (a dict), or the error."""
        values, error, name = await self._call(REVISE_REPLICA, obj, [obj, replicas])
        if error:
            return Interpreted(error=error, customization=name)
        return _object_result(REVISE_REPLICA, values, name)

    async def reflect_status(self, obj: Mapping[str, Any]) -> Interpreted:
        """`ReflectStatus(obj)`: the status to record (a dict, {} for none), or the error."""
        values, error, name = await self._call(REFLECT_STATUS, obj, [obj])
        if error:
            return Interpreted(error=error, customization=name)
        first = values[0] if values else LuaValue("nil", None)
        if first.type == "nil":
            return Interpreted({}, customization=name)
        if first.type != "table" or not isinstance(first.value, dict | list):
            return Interpreted(error=f"{REFLECT_STATUS} returned a {first.type}, not a table", customization=name)
        # An empty Lua table reads as an empty list: no status.
        return Interpreted(first.value if isinstance(first.value, dict) else {}, customization=name)

    async def aggregate_status(self, obj: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> Interpreted:
        """`AggregateStatus(obj, items)`, items as Karmada's AggregatedStatusItem JSON
        (clusterName, status, applied, health): the template object with its new status. No items
        reach the script as nil, as Karmada's do (its FlinkDeployment script tests for nil)."""
        values, error, name = await self._call(AGGREGATE_STATUS, obj, [obj, list(items) if items else None])
        if error:
            return Interpreted(error=error, customization=name)
        return _object_result(AGGREGATE_STATUS, values, name)

    async def retain(self, desired: Mapping[str, Any], observed: Mapping[str, Any]) -> Interpreted:
        """`Retain(desired, observed)`: the object to write over the member's (a dict), or the error."""
        values, error, name = await self._call(RETAIN, desired, [desired, observed])
        if error:
            return Interpreted(error=error, customization=name)
        return _object_result(RETAIN, values, name)


    async def get_dependencies(self, obj: Mapping[str, Any]) -> Interpreted:
        """`GetDependencies(obj)`: a list of (apiVersion, kind, namespace, name), the namespace
        the workload's when the script leaves it out; or the error (never a partial list: one
        dependency missing from it would take that dependent off every member)."""
        values, error, name = await self._call(GET_DEPENDENCIES, obj, [obj])
        if error:
            return Interpreted(error=error, customization=name)
        try:
            namespace = str((obj.get("metadata") or {}).get("namespace") or "")
            return Interpreted(dependency_list(values, namespace), customization=name)
        except ValueError as e:
            return Interpreted(error=f"{GET_DEPENDENCIES}: {e}", customization=name)


    async def get_components(self, obj: Mapping[str, Any]) -> Interpreted:
        """`GetComponents(obj)`: a list of work_pb2.Component (empty for nil), or the error."""
        values, error, name = await self._call(GET_COMPONENTS, obj, [obj])
        if error:
            return Interpreted(error=error, customization=name)
        try:
            return Interpreted(component_list(values), customization=name)
        except ValueError as e:
            return Interpreted(error=f"{GET_COMPONENTS}: {e}", customization=name)


def component_list(values: Sequence[LuaValue]) -> list[work_pb2.Component]:
    """GetComponents' answer as Karmada reads it: a table of components or nil (none). Every
    component needs a unique name of at most 32 characters and a whole number of replicas."""
    first = values[0] if values else LuaValue("nil", None)
    if first.type == "nil" or (first.type == "table" and first.value in ({}, [])):
        return []
    if first.type != "table" or not isinstance(first.value, list):
        raise ValueError(f"returned a {first.type}, not a list of components")
    result: list[work_pb2.Component] = []
    for i, entry in enumerate(first.value):
        where = f"component {i + 1}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not a table")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: name is required and must be a string")
        if len(name) > _MAX_COMPONENT_NAME:
            raise ValueError(f"{where}: name {name!r} is longer than {_MAX_COMPONENT_NAME} characters")
        if any(c.name == name for c in result):
            raise ValueError(f"{where}: name {name!r} is used twice")
        component = work_pb2.Component(name=name, replicas=_whole_replicas(entry.get("replicas"), where))
        table = entry.get("replicaRequirements")
        if table is not None and table != []:
            if not isinstance(table, dict):
                raise ValueError(f"{where}: replicaRequirements is not a table")
            component.replica_requirements.CopyFrom(requirements(table))
        result.append(component)
    return result


def _whole_replicas(number: Any, where: str) -> int:
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise ValueError(f"{where}: replicas is required and must be a number")
    if number != number or not float(number).is_integer() or not 0 <= number <= _MAX_REPLICAS:
        raise ValueError(f"{where}: replicas {number!r} is not a whole number of replicas")
    return int(number)


def dependency_list(values: Sequence[LuaValue], namespace: str) -> list[tuple[str, str, str, str]]:
    """GetDependencies' answer as Karmada's DependentObjectReferences; a labelSelector (which
    Karmada can resolve to many objects) is not supported: the answer is refused, not half-read."""
    first = values[0] if values else LuaValue("nil", None)
    if first.type == "nil" or (first.type == "table" and first.value in ({}, [])):
        return []
    if first.type != "table" or not isinstance(first.value, list):
        raise ValueError(f"returned a {first.type}, not a list of dependencies")
    result = []
    for i, entry in enumerate(first.value):
        if not isinstance(entry, dict):
            raise ValueError(f"dependency {i + 1} is not a table")
        if entry.get("labelSelector") is not None:
            raise ValueError(f"dependency {i + 1}: a labelSelector is not supported by Flotilla; name the object")
        fields = [entry.get(field) for field in ("apiVersion", "kind", "name")]
        if not all(isinstance(field, str) and field for field in fields):
            raise ValueError(f"dependency {i + 1} needs apiVersion, kind and name as strings")
        dep_namespace = entry.get("namespace") or namespace
        if not isinstance(dep_namespace, str):
            raise ValueError(f"dependency {i + 1}: namespace is not a string")
        if dep_namespace != namespace:
            # Karmada's distributor propagates a workload's dependencies in its own namespace.
            raise ValueError(f"dependency {i + 1} is in namespace {dep_namespace!r}, not the workload's")
        api_version, kind, name = fields
        result.append((str(api_version), str(kind), dep_namespace, str(name)))
    return result


def _object_result(function: str, values: Sequence[LuaValue], name: str) -> Interpreted:
    first = values[0] if values else LuaValue("nil", None)
    if first.type != "table" or not isinstance(first.value, dict):
        return Interpreted(error=f"{function} returned a {first.type}, not an object", customization=name)
    return Interpreted(first.value, customization=name)


def replica_resource(values: Sequence[LuaValue]) -> ReplicaResource:
    """GetReplicas' two return values as Karmada reads them: a whole number of replicas (Lua
    numbers are doubles: 3.0 is 3, 2.5 is an error) and an optional requirement table."""
    first = values[0] if values else LuaValue("nil", None)
    if first.type != "number" or isinstance(first.value, bool):
        raise ValueError(f"replica is a {first.type}, not a number")
    number = first.value
    if number != number or not float(number).is_integer() or not 0 <= number <= _MAX_REPLICAS:
        raise ValueError(f"replica {number!r} is not a whole number of replicas")
    second = values[1] if len(values) > 1 else LuaValue("nil", None)
    if second.type == "nil":
        return ReplicaResource(int(number), None)
    if second.type != "table":
        raise ValueError(f"requirement is a {second.type}, not a table")
    return ReplicaResource(int(number), requirements(second.value if isinstance(second.value, dict) else {}))


def requirements(table: Mapping[str, Any]) -> work_pb2.ReplicaRequirements:
    """Karmada's ReplicaRequirements from its JSON: quantities may be numbers (cpu = 0.5) or strings."""
    result = work_pb2.ReplicaRequirements()
    request = _table(table.get("resourceRequest"), "resourceRequest")
    for resource, amount in request.items():
        result.resource_request[resource] = _quantity(resource, amount)
    claim = _table(table.get("nodeClaim"), "nodeClaim")
    selector = _table(claim.get("nodeSelector"), "nodeClaim.nodeSelector")
    result.node_claim.node_selector.update({str(k): str(v) for k, v in selector.items()})
    tolerations = claim.get("tolerations") or []
    if not isinstance(tolerations, list):
        raise ValueError("nodeClaim.tolerations is not a list")
    for i, toleration in enumerate(tolerations):
        result.node_claim.tolerations.append(codec.parse_as(meta_pb2.Toleration, toleration,
                                                            f"nodeClaim.tolerations[{i}]"))
    affinity = claim.get("hardNodeAffinity")
    if affinity:
        result.node_claim.hard_node_affinity.CopyFrom(codec.parse_as(core_pb2.NodeSelector, affinity,
                                                                     "nodeClaim.hardNodeAffinity"))
    if not (result.node_claim.node_selector or result.node_claim.tolerations
            or result.node_claim.HasField("hard_node_affinity")):
        result.ClearField("node_claim")
    for field, json_name in (("namespace", "namespace"), ("priority_class_name", "priorityClassName")):
        value = table.get(json_name)
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"{json_name} is not a string")
            setattr(result, field, value)
    return result


def _table(value: Any, where: str) -> dict[str, Any]:
    """A Lua table as an object; an empty one converts to [] (no keys tell it apart)."""
    if value is None or value == []:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not a table")
    return value


def _quantity(resource: str, amount: Any) -> str:
    if isinstance(amount, str):
        return amount
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        raise ValueError(f"resourceRequest.{resource} is not a quantity")
    exact = Fraction(amount)
    binary = resource in _BINARY_RESOURCES or resource.startswith("hugepages-")
    return format_quantity(exact, Format.BINARY_SI if binary and exact.denominator == 1 else Format.DECIMAL_SI)
