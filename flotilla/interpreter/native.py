"""Karmada's default (native) health rules, as pure functions of a member object.

Each rule reads the object as the member's API server returns it (`metadata`,
`spec`, `status`). Karmada decodes the object into its typed Go struct first,
so a missing or null field is the zero value (0, "", empty list) while a field
of the wrong JSON type is a decoding error: here that error is an
InterpretationError, which the caller turns into Unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flotilla.interpreter.errors import InterpretationError

HealthRule = Callable[[Mapping[str, Any]], bool]
# Where a value sits in the object, for error messages: keys and list indices.
_Path = tuple[str | int, ...]


def deployment_healthy(obj: Mapping[str, Any]) -> bool:
    return _rollout_complete(obj)


def statefulset_healthy(obj: Mapping[str, Any]) -> bool:
    return _rollout_complete(obj)


def replicaset_healthy(obj: Mapping[str, Any]) -> bool:
    if not _generation_observed(obj):
        return False
    replicas = _optional_int(obj, "spec", "replicas")
    return replicas is None or _int(obj, "status", "availableReplicas") >= replicas


def daemonset_healthy(obj: Mapping[str, Any]) -> bool:
    if not _generation_observed(obj):
        return False
    updated = _int(obj, "status", "updatedNumberScheduled")
    if updated < _int(obj, "status", "desiredNumberScheduled"):
        return False
    return _int(obj, "status", "numberAvailable") >= updated


def service_healthy(obj: Mapping[str, Any]) -> bool:
    if _str(obj, "spec", "type") != "LoadBalancer":
        return True
    return _load_balancer_has_address(obj)


def ingress_healthy(obj: Mapping[str, Any]) -> bool:
    return _load_balancer_has_address(obj)


def persistentvolumeclaim_healthy(obj: Mapping[str, Any]) -> bool:
    return _str(obj, "status", "phase") == "Bound"


def pod_healthy(obj: Mapping[str, Any]) -> bool:
    phase = _str(obj, "status", "phase")
    if phase == "Succeeded":
        return True
    if phase != "Running":
        return False
    conditions = _list(obj, "status", "conditions")
    for index, condition in enumerate(conditions):
        path = ("status", "conditions", index)
        if _str(condition, "type", where=path) == "Ready":
            # Like Karmada's GetPodCondition, only the first Ready condition counts.
            return _str(condition, "status", where=path) == "True"
    return False


def poddisruptionbudget_healthy(obj: Mapping[str, Any]) -> bool:
    return _int(obj, "status", "currentHealthy") >= _int(obj, "status", "desiredHealthy")


# Keyed by the exact apiVersion, as Karmada keys them by GroupVersionKind:
# `extensions/v1beta1` Ingress or `policy/v1beta1` PodDisruptionBudget have no
# native rule. Job deliberately has none (docs/karmada-rules.md §13), so it is always Healthy
# and not eligible for application failover.
NATIVE_HEALTH_RULES: Mapping[tuple[str, str], HealthRule] = {
    ("apps/v1", "Deployment"): deployment_healthy,
    ("apps/v1", "StatefulSet"): statefulset_healthy,
    ("apps/v1", "ReplicaSet"): replicaset_healthy,
    ("apps/v1", "DaemonSet"): daemonset_healthy,
    ("v1", "Service"): service_healthy,
    ("networking.k8s.io/v1", "Ingress"): ingress_healthy,
    ("v1", "PersistentVolumeClaim"): persistentvolumeclaim_healthy,
    ("v1", "Pod"): pod_healthy,
    ("policy/v1", "PodDisruptionBudget"): poddisruptionbudget_healthy,
}


def native_health_rule(api_version: str, kind: str) -> HealthRule | None:
    """Karmada's built-in health rule for the kind, or None when it has none."""
    return NATIVE_HEALTH_RULES.get((api_version, kind))


def _rollout_complete(obj: Mapping[str, Any]) -> bool:
    """Deployment and StatefulSet: the controller saw the spec and every replica is updated and available."""
    if not _generation_observed(obj):
        return False
    updated = _int(obj, "status", "updatedReplicas")
    replicas = _optional_int(obj, "spec", "replicas")
    if replicas is not None and updated < replicas:
        return False
    return _int(obj, "status", "availableReplicas") >= updated


def _generation_observed(obj: Mapping[str, Any]) -> bool:
    return _int(obj, "status", "observedGeneration") == _int(obj, "metadata", "generation")


def _load_balancer_has_address(obj: Mapping[str, Any]) -> bool:
    for index, ingress in enumerate(_list(obj, "status", "loadBalancer", "ingress")):
        path = ("status", "loadBalancer", "ingress", index)
        if _str(ingress, "ip", where=path) or _str(ingress, "hostname", where=path):
            return True
    return False


def _lookup(obj: Any, path: tuple[str, ...], where: _Path) -> Any:
    value = obj
    for depth, key in enumerate(path):
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise _wrong_type(where + path[:depth], "an object", value)
        value = value.get(key)
    return value


def _optional_int(obj: Any, *path: str, where: _Path = ()) -> int | None:
    value = _lookup(obj, path, where)
    if value is None:
        return None
    # JSON decoders hand integral numbers back as floats sometimes (3.0); Go's
    # unstructured converter accepts those too. bool is an int in Python only.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(where + path, "an integer", value)
    return value


def _int(obj: Any, *path: str, where: _Path = ()) -> int:
    value = _optional_int(obj, *path, where=where)
    return 0 if value is None else value


def _str(obj: Any, *path: str, where: _Path = ()) -> str:
    value = _lookup(obj, path, where)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _wrong_type(where + path, "a string", value)
    return value


def _list(obj: Any, *path: str, where: _Path = ()) -> list[Any]:
    value = _lookup(obj, path, where)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(where + path, "a list", value)
    return value


def _wrong_type(path: _Path, expected: str, value: Any) -> InterpretationError:
    return InterpretationError(f"{_format_path(path)}: expected {expected}, got {_json_type(value)}")


def _format_path(path: _Path) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
