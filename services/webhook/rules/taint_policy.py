"""ClusterTaintPolicy: Karmada's validating webhook for it (docs/karmada-rules.md §5)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.taints import EFFECT_NO_EXECUTE
from flotilla.api.v1.policy_pb2 import ClusterTaintPolicy, MatchCondition
from services.webhook.rules.fields import child, index, unsupported

CONDITION_OPERATORS = ("In", "NotIn")


def validate_cluster_taint_policy(policy: ClusterTaintPolicy, allow_no_execute: bool) -> Iterator[FieldError]:
    spec = policy.spec
    yield from _validate_conditions(spec.add_on_conditions, "spec.addOnConditions")
    yield from _validate_conditions(spec.remove_on_conditions, "spec.removeOnConditions")
    taints_path = "spec.taints"
    if not spec.taints:
        yield FieldError(taints_path, "required: a ClusterTaintPolicy must have at least one taint")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.taints):
        taint_path = index(taints_path, i)
        if taint.effect == EFFECT_NO_EXECUTE and not allow_no_execute:
            # NoExecute taints evict workloads from every matching cluster at
            # once; an administrator has to opt in (--allow-no-execute-taint-policy).
            yield FieldError(
                child(taint_path, "effect"),
                "Configuring taint with NoExecute effect is not allowed, this capability must be explicitly "
                "enabled by administrators through command-line flags",
            )
        identity = (taint.key, taint.effect)
        if identity in seen:
            yield FieldError(
                taint_path,
                f"Duplicate taint with the same key({taint.key}) and effect({taint.effect}) is not allowed",
            )
        seen.add(identity)


def _validate_conditions(conditions: Sequence[MatchCondition], path: str) -> Iterator[FieldError]:
    for i, condition in enumerate(conditions):
        if condition.operator not in CONDITION_OPERATORS:
            yield unsupported(child(index(path, i), "operator"), condition.operator, CONDITION_OPERATORS)
