"""`placement.spreadConstraints`: how many groups of clusters (by field or label) a workload spans."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.v1.policy_pb2 import SpreadConstraint
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, invalid, unsupported

SPREAD_BY_CLUSTER = "cluster"
SPREAD_FIELDS = (SPREAD_BY_CLUSTER, "region", "zone", "provider")


def default_spread_constraints(constraints: Sequence[SpreadConstraint]) -> None:
    for constraint in constraints:
        if not constraint.spread_by_field and not constraint.spread_by_label:
            constraint.spread_by_field = SPREAD_BY_CLUSTER
        if constraint.min_groups == 0:
            constraint.min_groups = 1
        # maxGroups has no default: 0 stays 0, which selects no clusters (docs/karmada-rules.md §8.4).


def validate_spread_constraints(constraints: Sequence[SpreadConstraint], path: str) -> Iterator[FieldError]:
    by_field: set[str] = set()
    for i, constraint in enumerate(constraints):
        item_path = index(path, i)
        field, label = constraint.spread_by_field, constraint.spread_by_label
        if field and label:
            yield FieldError(child(item_path, "spreadByLabel"), "spreadByLabel should not co-exist with spreadByField")
        if label:
            yield from check(child(item_path, "spreadByLabel"), label, names.qualified_name)
        if field:
            if field not in SPREAD_FIELDS:
                yield unsupported(child(item_path, "spreadByField"), field, SPREAD_FIELDS)
            elif field in by_field:
                yield FieldError(
                    child(item_path, "spreadByField"), f"multiple {field} spread constraints are not allowed"
                )
            else:
                by_field.add(field)
        if constraint.min_groups < 0:
            yield invalid(child(item_path, "minGroups"), constraint.min_groups, "must be greater than or equal to 0")
        if constraint.max_groups < 0:
            yield invalid(child(item_path, "maxGroups"), constraint.max_groups, "must be greater than or equal to 0")
        elif 0 < constraint.max_groups < constraint.min_groups:
            yield invalid(
                child(item_path, "minGroups"),
                constraint.min_groups,
                f"must not be greater than maxGroups ({constraint.max_groups})",
            )
    if by_field and SPREAD_BY_CLUSTER not in by_field:
        # Region, zone and provider groups are made of clusters: without a
        # cluster constraint the scheduler cannot tell how many clusters to pick.
        yield FieldError(
            path,
            "the cluster spread constraint must be enabled in one of the constraints "
            "in case of SpreadByField is enabled",
        )
