"""Policy cluster tolerations: Kubernetes' toleration validation and Karmada's default NoExecute tolerations."""

from __future__ import annotations

from collections.abc import Iterator, MutableSequence, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    EFFECTS,
    OPERATOR_EQUAL,
    OPERATOR_EXISTS,
    TAINT_CLUSTER_NOT_READY,
    TAINT_CLUSTER_UNREACHABLE,
    tolerations_tolerate_taint,
)
from flotilla.api.v1.meta_pb2 import Taint, Toleration
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, invalid, unsupported

OPERATORS = ("", OPERATOR_EXISTS, OPERATOR_EQUAL)
EFFECTS_OR_ANY = ("", *EFFECTS)


def default_tolerations(
    tolerations: MutableSequence[Toleration], not_ready_seconds: int, unreachable_seconds: int
) -> None:
    """Tolerate the not-ready/unreachable NoExecute taints for a while unless the policy already does.

    A policy that tolerates the taint in any way (forever, for 30 s, with an
    empty key) has already said how long it stays; a default next to it
    would be a second, contradicting answer. Zero seconds disables the default.
    """
    defaults = ((TAINT_CLUSTER_NOT_READY, not_ready_seconds), (TAINT_CLUSTER_UNREACHABLE, unreachable_seconds))
    for taint_key, seconds in defaults:
        if seconds <= 0:
            continue
        if tolerations_tolerate_taint(tolerations, Taint(key=taint_key, effect=EFFECT_NO_EXECUTE)):
            continue
        tolerations.append(
            Toleration(key=taint_key, operator=OPERATOR_EXISTS, effect=EFFECT_NO_EXECUTE, toleration_seconds=seconds)
        )


def validate_tolerations(tolerations: Sequence[Toleration], path: str) -> Iterator[FieldError]:
    for i, toleration in enumerate(tolerations):
        yield from validate_toleration(toleration, index(path, i))


def validate_toleration(toleration: Toleration, path: str) -> Iterator[FieldError]:
    """Kubernetes' ValidateTolerations, in the order of the YAML fields."""
    if toleration.key:
        yield from check(child(path, "key"), toleration.key, names.qualified_name)
    elif toleration.operator != OPERATOR_EXISTS:
        yield invalid(
            child(path, "operator"),
            toleration.operator,
            'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        )
    if toleration.operator in ("", OPERATOR_EQUAL):
        yield from check(child(path, "value"), toleration.value, names.label_value)
    elif toleration.operator == OPERATOR_EXISTS:
        if toleration.value:
            yield invalid(child(path, "value"), toleration.value, "value must be empty when `operator` is 'Exists'")
    else:
        yield unsupported(child(path, "operator"), toleration.operator, OPERATORS)
    if toleration.effect not in EFFECTS_OR_ANY:
        yield unsupported(child(path, "effect"), toleration.effect, EFFECTS_OR_ANY)
    elif toleration.HasField("toleration_seconds") and toleration.effect != EFFECT_NO_EXECUTE:
        # Only the NoExecute taint manager ever counts seconds; on any other
        # effect the number would silently mean nothing.
        yield invalid(
            child(path, "effect"), toleration.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
        )
