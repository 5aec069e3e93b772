"""OverridePolicy and ClusterOverridePolicy admission: Karmada's webhook (ValidateOverrideSpec)
and CRD schema (required fields, operator and component enums), each problem with its path.

Why refuse rather than store: an override that cannot be applied is found only when a Work is
built — for a failover, when the copy on the new cluster is needed — so every check that can be
made on the policy alone is made here. The overriders of the deprecated `spec.overriders` are
checked like those of `overrideRules` (Karmada's CRD enums apply to both).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.limits import MAX_ANNOTATIONS_BYTES
from flotilla.api.v1.policy_pb2 import (
    ClusterOverridePolicy,
    LabelAnnotationOverrider,
    OverridePolicy,
    Overriders,
    OverrideSpec,
    PatchOperation,
)
from flotilla.rules.overrides import ADD, IMAGE_COMPONENTS, OPERATORS, REMOVE, REPLACE
from services.webhook.rules import names
from services.webhook.rules.affinity import validate_cluster_affinity
from services.webhook.rules.fields import check, child, index, invalid, key, required, too_long, unsupported
from services.webhook.rules.selectors import validate_resource_selectors

COMMAND_ARGS_OPERATORS = (ADD, REMOVE)
_BAD_ESCAPE = re.compile(r"~(?![01])")


def validate_override_policy(policy: OverridePolicy | ClusterOverridePolicy) -> Iterator[FieldError]:
    namespace = policy.metadata.namespace if isinstance(policy, OverridePolicy) else None
    yield from validate_override_spec(policy.spec, namespace, "spec")


def validate_override_spec(spec: OverrideSpec, namespace: str | None, path: str) -> Iterator[FieldError]:
    # Empty selects every resource (unlike a propagation policy's); an OverridePolicy only its namespace's.
    yield from validate_resource_selectors(spec.resource_selectors, namespace, False, child(path, "resourceSelectors"),
                                           kind="OverridePolicy", at_least_one=False)
    if spec.HasField("target_cluster"):
        if spec.override_rules:
            yield FieldError(child(path, "targetCluster"), "overrideRules and targetCluster can't co-exist")
        yield from validate_cluster_affinity(spec.target_cluster, child(path, "targetCluster"))
    if spec.override_rules and _has_overriders(spec.overriders):
        yield FieldError(child(path, "overriders"), "overrideRules and overriders can't co-exist")
    yield from validate_overriders(spec.overriders, child(path, "overriders"))
    for i, rule in enumerate(spec.override_rules):
        rule_path = index(child(path, "overrideRules"), i)
        if rule.HasField("target_cluster"):
            yield from validate_cluster_affinity(rule.target_cluster, child(rule_path, "targetCluster"))
        yield from validate_overriders(rule.overriders, child(rule_path, "overriders"))


def _has_overriders(overriders: Overriders) -> bool:
    return any(len(getattr(overriders, f.name)) for f in overriders.DESCRIPTOR.fields)


def validate_overriders(overriders: Overriders, path: str) -> Iterator[FieldError]:
    for i, plain in enumerate(overriders.plaintext):
        p = index(child(path, "plaintext"), i)
        yield from _pointer(plain.path, child(p, "path"), required_value=True)
        yield from _operator(plain.operator, child(p, "operator"), OPERATORS)
    for i, image in enumerate(overriders.image_overrider):
        p = index(child(path, "imageOverrider"), i)
        if not image.component:
            yield required(child(p, "component"))
        elif image.component not in IMAGE_COMPONENTS:
            yield unsupported(child(p, "component"), image.component, IMAGE_COMPONENTS)
        yield from _operator(image.operator, child(p, "operator"), OPERATORS)
        if image.HasField("predicate"):
            yield from _pointer(image.predicate.path, child(child(p, "predicate"), "path"), required_value=True)
    for name, command_args in (("commandOverrider", overriders.command_overrider),
                               ("argsOverrider", overriders.args_overrider)):
        for i, ca in enumerate(command_args):
            p = index(child(path, name), i)
            if not ca.container_name:
                yield required(child(p, "containerName"))
            yield from _operator(ca.operator, child(p, "operator"), COMMAND_ARGS_OPERATORS)
    for i, la in enumerate(overriders.labels_overrider):
        yield from _label_annotation(la, index(child(path, "labelsOverrider"), i), labels=True)
    for i, la in enumerate(overriders.annotations_overrider):
        yield from _label_annotation(la, index(child(path, "annotationsOverrider"), i), labels=False)
    for i, fo in enumerate(overriders.field_overrider):
        p = index(child(path, "fieldOverrider"), i)
        if fo.json and fo.yaml:
            yield FieldError(p, "FieldOverrider has both YAML and JSON set. Only one is allowed")
        if not fo.json and not fo.yaml:
            yield FieldError(p, "required: FieldOverrider must have either JSON or YAML set")
        yield from _pointer(fo.field_path, child(p, "fieldPath"), required_value=True)
        for which, operations in (("json", fo.json), ("yaml", fo.yaml)):
            for j, operation in enumerate(operations):
                yield from _patch_operation(operation, index(child(p, which), j))


def _label_annotation(overrider: LabelAnnotationOverrider, path: str, labels: bool) -> Iterator[FieldError]:
    yield from _operator(overrider.operator, child(path, "operator"), OPERATORS)
    value_path = child(path, "value")
    for k in sorted(overrider.value):
        yield from check(key(value_path, k), k, names.qualified_name)
        if labels:
            yield from check(key(value_path, k), overrider.value[k], names.label_value)
    if not labels and sum(len(k.encode()) + len(v.encode()) for k, v in overrider.value.items()) \
            > MAX_ANNOTATIONS_BYTES:
        yield too_long(value_path, MAX_ANNOTATIONS_BYTES)


def _patch_operation(operation: PatchOperation, path: str) -> Iterator[FieldError]:
    yield from _pointer(operation.sub_path, child(path, "subPath"), required_value=False)
    yield from _operator(operation.operator, child(path, "operator"), OPERATORS)
    if operation.operator in (ADD, REPLACE) and not operation.value:
        yield FieldError(child(path, "value"), "value is required for add or replace operation")
    if operation.operator == REMOVE and operation.value:
        yield FieldError(child(path, "value"), "value is not allowed for remove operation")


def _operator(operator: str, path: str, allowed: Sequence[str]) -> Iterator[FieldError]:
    if not operator:
        yield required(path)
    elif operator not in allowed:
        yield unsupported(path, operator, allowed)


def _pointer(pointer: str, path: str, required_value: bool) -> Iterator[FieldError]:
    """A JSON pointer (RFC 6901): empty (the whole document) or starting with "/", `~` only as `~0`/`~1`."""
    if not pointer:
        if required_value:
            yield required(path)
        return
    if not pointer.startswith("/"):
        yield invalid(path, pointer, 'JSON pointer must be empty or start with a "/"')
    elif _BAD_ESCAPE.search(pointer):
        yield invalid(path, pointer, 'in a JSON pointer "~" must be followed by "0" or "1"')
