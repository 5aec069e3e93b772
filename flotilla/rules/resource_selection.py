"""Which templates a propagation policy's resourceSelectors pick (Karmada's ResourceMatches),
and how specifically: the detector's precedence and the offline `flotillactl schedule` share it.

A selector matches on apiVersion, kind and (if set) namespace; then a name picks that one
object only (a label selector beside it is ignored), a label selector the objects it selects,
and neither every object of the kind. A PropagationPolicy only sees its own namespace; a
policy being deleted picks nothing.
"""

from __future__ import annotations

from enum import IntEnum

from flotilla.api.selectors import label_selector_matches
from flotilla.api.v1 import meta_pb2, policy_pb2

Policy = policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy


class Match(IntEnum):
    """Karmada's implicit priority: how specifically a selector picks a template."""

    NONE = 0
    ALL = 1
    LABEL_SELECTOR = 2
    NAME = 3


def selector_match(selector: policy_pb2.ResourceSelector, template: meta_pb2.Unstructured) -> Match:
    meta = template.metadata
    if selector.api_version != template.api_version or selector.kind != template.kind:
        return Match.NONE
    if selector.namespace and selector.namespace != meta.namespace:
        return Match.NONE
    if selector.name:
        return Match.NAME if selector.name == meta.name else Match.NONE
    if not selector.HasField("label_selector"):
        return Match.ALL
    return Match.LABEL_SELECTOR if label_selector_matches(selector.label_selector, meta.labels) else Match.NONE


def policy_match(policy: Policy, template: meta_pb2.Unstructured) -> Match:
    """The best match among the policy's selectors."""
    if policy.metadata.HasField("deletion_timestamp"):
        return Match.NONE
    if isinstance(policy, policy_pb2.PropagationPolicy) and policy.metadata.namespace != template.metadata.namespace:
        return Match.NONE
    return max((selector_match(s, template) for s in policy.spec.resource_selectors), default=Match.NONE)


def selects(policy: Policy, template: meta_pb2.Unstructured) -> bool:
    return policy_match(policy, template) is not Match.NONE
