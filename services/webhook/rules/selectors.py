"""Resource selectors of a policy, and the label selectors they and cluster affinities carry."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flotilla.api.codec import FieldError
from flotilla.api.limits import MAX_SELECTORS
from flotilla.api.v1.meta_pb2 import LabelSelector
from flotilla.api.v1.policy_pb2 import ResourceSelector
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, invalid, key, required, too_many, unsupported

SERVICE_IMPORT_API_VERSION = "multicluster.x-k8s.io/v1alpha1"
SERVICE_IMPORT_KIND = "ServiceImport"

SELECTOR_OPERATORS_WITH_VALUES = ("In", "NotIn")
SELECTOR_OPERATORS_WITHOUT_VALUES = ("Exists", "DoesNotExist")
SELECTOR_OPERATORS = (*SELECTOR_OPERATORS_WITH_VALUES, *SELECTOR_OPERATORS_WITHOUT_VALUES)


def default_selector_namespaces(selectors: Sequence[ResourceSelector], namespace: str) -> None:
    """A PropagationPolicy only ever selects resources of its own namespace."""
    for selector in selectors:
        if not selector.namespace:
            selector.namespace = namespace


def selects_service_import(selectors: Sequence[ResourceSelector]) -> bool:
    return any(s.api_version == SERVICE_IMPORT_API_VERSION and s.kind == SERVICE_IMPORT_KIND for s in selectors)


def validate_resource_selectors(
    selectors: Sequence[ResourceSelector], policy_namespace: str | None, names_required: bool, path: str,
    kind: str = "PropagationPolicy", at_least_one: bool = True,
) -> Iterator[FieldError]:
    """`policy_namespace` is None for a cluster-scoped policy, which may select any namespace.

    `names_required` is set by `preemption: Always`: a policy may only take
    resources over from another policy when it names each of them. An OverridePolicy's empty
    list selects everything (`at_least_one=False`).
    """
    if at_least_one and not selectors:
        yield FieldError(path, "required: a policy must select at least one resource")
    if len(selectors) > MAX_SELECTORS:
        # One line, not one per selector: the list is refused as a whole.
        yield too_many(path, len(selectors), MAX_SELECTORS)
        return
    for i, selector in enumerate(selectors):
        selector_path = index(path, i)
        if not selector.api_version:
            yield required(child(selector_path, "apiVersion"))
        if not selector.kind:
            yield required(child(selector_path, "kind"))
        # An empty policy namespace is reported on metadata.namespace; comparing to it would only echo that.
        if policy_namespace and selector.namespace and selector.namespace != policy_namespace:
            yield invalid(
                child(selector_path, "namespace"),
                selector.namespace,
                f'a {kind} can only select resources in its own namespace "{policy_namespace}"',
            )
        if names_required and not selector.name:
            yield FieldError(child(selector_path, "name"), "required when preemption is Always")
        if selector.HasField("label_selector"):
            yield from validate_label_selector(selector.label_selector, child(selector_path, "labelSelector"))


def validate_label_selector(selector: LabelSelector, path: str) -> Iterator[FieldError]:
    """metav1 ValidateLabelSelector: a selector that cannot be evaluated is refused, not ignored."""
    labels_path = child(path, "matchLabels")
    for label in sorted(selector.match_labels):
        yield from check(key(labels_path, label), label, names.qualified_name)
        yield from check(key(labels_path, label), selector.match_labels[label], names.label_value)
    for i, requirement in enumerate(selector.match_expressions):
        requirement_path = index(child(path, "matchExpressions"), i)
        if not requirement.key:
            yield required(child(requirement_path, "key"))
        else:
            yield from check(child(requirement_path, "key"), requirement.key, names.qualified_name)
        values_path = child(requirement_path, "values")
        if requirement.operator in SELECTOR_OPERATORS_WITH_VALUES:
            if not requirement.values:
                yield FieldError(values_path, f"must be specified when `operator` is '{requirement.operator}'")
            for j, value in enumerate(requirement.values):
                yield from check(index(values_path, j), value, names.label_value)
        elif requirement.operator in SELECTOR_OPERATORS_WITHOUT_VALUES:
            if requirement.values:
                yield FieldError(values_path, f"may not be specified when `operator` is '{requirement.operator}'")
        else:
            yield unsupported(child(requirement_path, "operator"), requirement.operator, SELECTOR_OPERATORS)
