"""Cluster taints and policy tolerations, with Kubernetes' matching rules."""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableSequence, Sequence

from flotilla.api.v1.meta_pb2 import Taint, Toleration

TAINT_CLUSTER_NOT_READY = "cluster.karmada.io/not-ready"
TAINT_CLUSTER_UNREACHABLE = "cluster.karmada.io/unreachable"
TAINT_CLUSTER_UNSCHEDULABLE = "cluster.karmada.io/unschedulable"
# Karmada ≤ v1.13 only; kept so such taints are recognised.
TAINT_CLUSTER_TERMINATING = "cluster.karmada.io/terminating"

EFFECT_NO_SCHEDULE = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
EFFECT_NO_EXECUTE = "NoExecute"
EFFECTS = (EFFECT_NO_SCHEDULE, EFFECT_PREFER_NO_SCHEDULE, EFFECT_NO_EXECUTE)

OPERATOR_EQUAL = "Equal"
OPERATOR_EXISTS = "Exists"

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def toleration_tolerates_taint(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' Toleration.ToleratesTaint.

    An empty effect matches every effect. Exists with an empty key matches
    every taint; otherwise the keys must be equal. Operator "" means Equal,
    which also compares values. Other operators (Lt, Gt) tolerate nothing.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == OPERATOR_EXISTS:
        return not toleration.key or toleration.key == taint.key
    if toleration.operator in ("", OPERATOR_EQUAL):
        # Kubernetes validation forbids an empty key here; such a toleration
        # matches nothing instead of every taint with an equal value.
        return bool(toleration.key) and toleration.key == taint.key and toleration.value == taint.value
    return False


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def get_matching_tolerations(
    taints: Sequence[Taint], tolerations: Sequence[Toleration]
) -> tuple[bool, list[Toleration]]:
    """Kubernetes' GetMatchingTolerations: whether every taint is tolerated, and by which tolerations.

    For each taint the first tolerating toleration is used; on the first
    untolerated taint the answer is (False, []).
    """
    used: list[Toleration] = []
    for taint in taints:
        match = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Sequence[Toleration]) -> int | None:
    """How long the tolerations let a workload stay: None is forever, 0 is evict now.

    Kubernetes' getMinTolerationTime: no tolerations -> 0; any
    tolerationSeconds <= 0 -> 0; else the smallest set value; none set -> forever.
    """
    if not tolerations:
        return 0
    smallest: int | None = None
    for toleration in tolerations:
        if not toleration.HasField("toleration_seconds"):
            continue
        if toleration.toleration_seconds <= 0:
            return 0
        if smallest is None or toleration.toleration_seconds < smallest:
            smallest = toleration.toleration_seconds
    return smallest


def tolerated_indefinitely(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Whether a workload with these tolerations would never be evicted for these NoExecute taints:
    each is tolerated, and the toleration in use for it (Kubernetes': the first that matches, as
    the taint manager reads it) sets no tolerationSeconds."""
    tolerated, used = get_matching_tolerations(taints, tolerations)
    return tolerated and (not used or min_toleration_seconds(used) is None)


def parse_taint_spec(spec: str) -> tuple[Taint, bool]:
    """Parse a `kubectl taint` argument: `key[=value]:Effect` adds, a trailing `-` removes.

    Returns (taint, remove). For removal the effect may be omitted (`key-`),
    meaning every effect of that key.
    """
    remove = spec.endswith("-")
    body = spec[:-1] if remove else spec
    key, sep, effect = body.partition(":")
    if not sep and not remove:
        raise ValueError(f'invalid taint spec "{spec}": expected key[=value]:Effect')
    if ":" in effect:
        raise ValueError(f'invalid taint spec "{spec}"')
    if sep and effect not in EFFECTS:
        raise ValueError(f'invalid taint effect "{effect}" in "{spec}": must be one of {", ".join(EFFECTS)}')
    key, eq, value = key.partition("=")
    if remove and eq:
        raise ValueError(f'invalid taint spec "{spec}": a removal names only key[:Effect]')
    if "=" in value:
        raise ValueError(f'invalid taint spec "{spec}"')
    _validate_key(key, spec)
    if value and (not _LABEL_VALUE.match(value) or len(value) > 63):
        raise ValueError(f'invalid taint value "{value}" in "{spec}": must be a valid label value')
    return Taint(key=key, value=value, effect=effect), remove


def _validate_key(key: str, spec: str) -> None:
    prefix, slash, name = key.rpartition("/")
    valid = bool(_QUALIFIED_NAME.match(name)) and len(name) <= 63
    if slash:
        valid = valid and bool(_DNS_SUBDOMAIN.match(prefix)) and len(prefix) <= 253
    if not valid:
        raise ValueError(f'invalid taint key "{key}" in "{spec}": must be a qualified name like example.com/name')


def find_taint(taints: Iterable[Taint], key: str, effect: str) -> Taint | None:
    for taint in taints:
        if taint.key == key and taint.effect == effect:
            return taint
    return None


def add_taint(taints: MutableSequence[Taint], taint: Taint) -> bool:
    """Add a taint, or replace the one with the same (key, effect); return whether anything changed.

    An identical taint already present keeps its timeAdded.
    """
    existing = find_taint(taints, taint.key, taint.effect)
    if existing is not None:
        if existing.value == taint.value:
            return False
        existing.CopyFrom(taint)
        return True
    taints.append(taint)
    return True


def remove_taint(taints: MutableSequence[Taint], key: str, effect: str = "") -> bool:
    """Remove the taint with (key, effect), or every taint of key when effect is ""."""
    keep = [t for t in taints if not (t.key == key and (not effect or t.effect == effect))]
    if len(keep) == len(taints):
        return False
    # Copies first: deleting from a protobuf repeated field invalidates the removed messages.
    kept = [_copy(t) for t in keep]
    del taints[:]
    taints.extend(kept)
    return True


def _copy(taint: Taint) -> Taint:
    copy = Taint()
    copy.CopyFrom(taint)
    return copy
