"""The Prometheus Operator's kinds in deploy/k8s (components/monitoring). kubernetes-validate knows
no CRD, so each is checked against the part of its CRD (monitoring.coreos.com/v1, as the
operator's openAPIV3Schema types it) that Flotilla uses: those fields only, with their types,
patterns and required fields, so a misspelt or misplaced field fails as it would on a cluster
that prunes or refuses unknown fields."""

from __future__ import annotations

from typing import Any

import jsonschema

# The operator's Duration (monitoringv1.Duration).
DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                                         r"(([0-9]+)s)?(([0-9]+)ms)?)$"}
STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False}


LABEL_SELECTOR = _object(
    [], matchLabels=STRINGS,
    matchExpressions={"type": "array", "items": _object(
        ["key", "operator"], key={"type": "string"}, operator={"type": "string"},
        values={"type": "array", "items": {"type": "string"}})},
)
METADATA = _object(["name", "namespace"], name={"type": "string"}, namespace={"type": "string"}, labels=STRINGS)


def _kind(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _object(["apiVersion", "kind", "metadata", "spec"], apiVersion={"const": "monitoring.coreos.com/v1"},
                   kind={"const": kind}, metadata=METADATA, spec=spec)


POD_MONITOR = _kind("PodMonitor", _object(
    ["selector"], jobLabel={"type": "string"}, selector=LABEL_SELECTOR,
    podMetricsEndpoints={"type": "array", "items": _object(
        [], port={"type": "string"}, path={"type": "string"}, interval=DURATION)},
))

# A rule records or alerts, never both (the operator's admission webhook refuses either mistake).
_RULE = {**_object(["expr"], record={"type": "string"}, alert={"type": "string"},
                   expr={"anyOf": [{"type": "string"}, {"type": "integer"}]}, labels=STRINGS,
                   annotations=STRINGS, **{"for": DURATION}),
         "oneOf": [{"required": ["record"]}, {"required": ["alert"]}]}
PROMETHEUS_RULE = _kind("PrometheusRule", _object(
    ["groups"], groups={"type": "array", "items": _object(
        ["name"], name={"type": "string", "minLength": 1}, interval=DURATION,
        rules={"type": "array", "items": _RULE})},
))

SCHEMAS = {"PodMonitor": POD_MONITOR, "PrometheusRule": PROMETHEUS_RULE}
CUSTOM_KINDS = frozenset(SCHEMAS)


def validate(obj: dict[str, Any]) -> None:
    """Raises jsonschema.ValidationError, naming the path of what is wrong."""
    jsonschema.Draft7Validator(SCHEMAS[obj["kind"]]).validate(obj)
