"""Cluster affinity: the single `clusterAffinity`, the ordered `clusterAffinities` terms and their overflow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.limits import MAX_SELECTORS
from flotilla.api.v1.policy_pb2 import (
    ClusterAffinity,
    ClusterAffinityTerm,
    FieldSelector,
    OverflowClusterAffinity,
)
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, required, too_many
from services.webhook.rules.selectors import validate_label_selector

FIELD_SELECTOR_KEYS = ("provider", "region", "zone")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
AFFINITY_NAME_MAX = 32

AnyAffinity = ClusterAffinity | ClusterAffinityTerm | OverflowClusterAffinity


def validate_cluster_affinity(affinity: AnyAffinity, path: str) -> Iterator[FieldError]:
    if affinity.HasField("label_selector"):
        yield from validate_label_selector(affinity.label_selector, child(path, "labelSelector"))
    if affinity.HasField("field_selector"):
        yield from validate_field_selector(affinity.field_selector, child(path, "fieldSelector"))


def validate_field_selector(selector: FieldSelector, path: str) -> Iterator[FieldError]:
    """Only the Cluster fields the scheduler knows how to read can be selected on."""
    for i, requirement in enumerate(selector.match_expressions):
        requirement_path = index(child(path, "matchExpressions"), i)
        if requirement.key not in FIELD_SELECTOR_KEYS:
            yield FieldError(
                child(requirement_path, "key"),
                f'unsupported key "{requirement.key}", must be provider, region, or zone',
            )
        if requirement.operator not in FIELD_SELECTOR_OPERATORS:
            yield FieldError(
                child(requirement_path, "operator"),
                f'unsupported operator "{requirement.operator}", must be In or NotIn',
            )


def validate_cluster_affinities(
    terms: Sequence[ClusterAffinityTerm], overflow_allowed: bool, path: str
) -> Iterator[FieldError]:
    """`overflow_allowed`: whether the replica scheduling can spill replicas into overflow terms."""
    # Names identify the term the scheduler settled on
    # (status.schedulerObservingAffinityName), so they are unique across
    # terms and their overflow terms alike.
    if len(terms) > MAX_SELECTORS:
        yield too_many(path, len(terms), MAX_SELECTORS)
        return
    seen: dict[str, str] = {}
    for i, term in enumerate(terms):
        term_path = index(path, i)
        yield from _affinity_name(term.affinity_name, child(term_path, "affinityName"), seen)
        yield from validate_cluster_affinity(term, term_path)
        if not term.overflow_affinities:
            continue
        overflow_path = child(term_path, "overflowAffinities")
        if not overflow_allowed:
            yield FieldError(
                overflow_path,
                "overflowAffinities is only supported with Divided replica scheduling "
                "by dynamic weight (AvailableReplicas) or Aggregated",
            )
        if not _has_inline_affinity(term):
            yield FieldError(
                overflow_path,
                "overflowAffinities needs the term itself to select clusters "
                "(labelSelector, fieldSelector, clusterNames or exclude)",
            )
        for j, overflow in enumerate(term.overflow_affinities):
            item_path = index(overflow_path, j)
            yield from _affinity_name(overflow.affinity_name, child(item_path, "affinityName"), seen)
            yield from validate_cluster_affinity(overflow, item_path)


def _affinity_name(name: str, path: str, seen: dict[str, str]) -> Iterator[FieldError]:
    if not name:
        yield required(path)
        return
    if len(name) > AFFINITY_NAME_MAX:
        yield FieldError(path, f"must be no more than {AFFINITY_NAME_MAX} characters")
    yield from check(path, name, names.qualified_name)
    if name in seen:
        yield FieldError(
            path,
            f'duplicate name "{name}" (also at {seen[name]}): each affinity term in a policy must have a unique name',
        )
    else:
        seen[name] = path


def _has_inline_affinity(term: ClusterAffinityTerm) -> bool:
    return (
        term.HasField("label_selector")
        or term.HasField("field_selector")
        or bool(term.cluster_names)
        or bool(term.exclude)
    )
