"""Which propagation policy claims a resource template (Karmada's detector matching rules).

Pure: a template, the policies and the binding's current claim in, one policy (or none) out.

- A selector matches on apiVersion, kind and (if set) namespace; then a name matches that one
  object only (a label selector beside it is ignored), a label selector the objects it selects,
  and neither every object of the kind. A PropagationPolicy only sees its own namespace.
- Among the policies matching a template: the higher explicit `priority` wins, then the more
  specific match (name over label selector over match-all), then the smaller policy name.
- PropagationPolicies are looked at before ClusterPropagationPolicies: a CPP only gets templates
  no PP in their namespace matches.
- A claim sticks: a template whose binding a policy claims stays with that policy while the
  policy exists and still matches it, even when a better policy appears — unless the better
  one has `preemption: Always` and the PropagationPolicyPreemption gate is on (a PP preempts any
  CPP and lower-priority PPs; a CPP preempts only lower-priority CPPs).
- Policies being deleted claim nothing.

Karmada never chooses a policy with a negative priority over none; here priorities are simply
ordered, so a lone negative-priority policy claims its templates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from flotilla.api import keys
from flotilla.api.v1 import meta_pb2, policy_pb2
from flotilla.api.wellknown import (
    CPP_NAME_ANNOTATION,
    CPP_PERMANENT_ID_LABEL,
    PP_NAME_ANNOTATION,
    PP_NAMESPACE_ANNOTATION,
    PP_PERMANENT_ID_LABEL,
)
from flotilla.rules.resource_selection import Match, policy_match

Policy = policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy

PREEMPT_ALWAYS = "Always"
# Namespaces whose objects are never propagated: Karmada's own, and the default
# --skipped-propagating-namespaces.
RESERVED_NAMESPACES = frozenset({"karmada-system", "karmada-cluster"})
DEFAULT_SKIPPED_NAMESPACES: tuple[str, ...] = ("kube-.*",)

CLAIM_LABELS = (PP_PERMANENT_ID_LABEL, CPP_PERMANENT_ID_LABEL)
CLAIM_ANNOTATIONS = (PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION, CPP_NAME_ANNOTATION)


@dataclass(frozen=True)
class Claim:
    """The policy a binding says claimed it."""

    kind: str
    namespace: str
    name: str
    permanent_id: str

    @property
    def key(self) -> str:
        return claim_key(self.kind, self.namespace, self.name)


def claim_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}:{keys.object_key(namespace, name)}"


def policy_claim_key(policy: Policy) -> str:
    return claim_key(_kind_of(policy), policy.metadata.namespace, policy.metadata.name)


def _kind_of(policy: Policy) -> str:
    return "PropagationPolicy" if isinstance(policy, policy_pb2.PropagationPolicy) else "ClusterPropagationPolicy"


def claim_of(meta: meta_pb2.ObjectMeta) -> Claim | None:
    """The claim recorded in a binding's annotations and labels (a PP's wins over a CPP's)."""
    annotations, labels = meta.annotations, meta.labels
    if annotations.get(PP_NAME_ANNOTATION):
        return Claim("PropagationPolicy", annotations.get(PP_NAMESPACE_ANNOTATION, ""),
                     annotations[PP_NAME_ANNOTATION], labels.get(PP_PERMANENT_ID_LABEL, ""))
    if annotations.get(CPP_NAME_ANNOTATION):
        return Claim("ClusterPropagationPolicy", "", annotations[CPP_NAME_ANNOTATION],
                     labels.get(CPP_PERMANENT_ID_LABEL, ""))
    return None


def permanent_id(policy: Policy) -> str:
    label = PP_PERMANENT_ID_LABEL if _kind_of(policy) == "PropagationPolicy" else CPP_PERMANENT_ID_LABEL
    return policy.metadata.labels.get(label, "")


def is_claimed_by(claim: Claim, policy: Policy) -> bool:
    """Same kind, namespace and name — and the same permanent id, so a policy deleted and
    created again under the same name is a new policy."""
    meta = policy.metadata
    return (claim.kind == _kind_of(policy) and claim.namespace == meta.namespace and claim.name == meta.name
            and claim.permanent_id == permanent_id(policy))


def selector_index(policy: Policy) -> list[str]:
    """Index values under which a policy is found by the templates it may select, one per
    selector: its apiVersion and kind behind the namespace a PropagationPolicy is confined to,
    then the name it selects, or else one label its selector requires (every object it selects
    has that label), or else nothing more (it selects every object of the kind, or selects by
    expressions only). A template asks for `candidate_keys`, so it looks at a handful of
    policies, not every policy in its namespace: a namespace with a policy per workload, or a
    label per pair of clusters, made the detector quadratic."""
    namespace = policy.metadata.namespace if isinstance(policy, policy_pb2.PropagationPolicy) else ""
    return sorted({_selector_key(namespace, s.api_version, s.kind, _narrowest(s))
                   for s in policy.spec.resource_selectors})


def candidate_keys(template: meta_pb2.Unstructured, namespace: str) -> list[str]:
    """The `selector_index` values of every policy that can select `template`: those naming it,
    those requiring one of its labels, and those naming neither. `namespace` is the template's
    for PropagationPolicies, empty for ClusterPropagationPolicies."""
    api_version, kind, meta = template.api_version, template.kind, template.metadata
    return [_selector_key(namespace, api_version, kind, narrowed)
            for narrowed in ("", f"name:{meta.name}", *(f"label:{k}={v}" for k, v in meta.labels.items()))]


def _narrowest(selector: policy_pb2.ResourceSelector) -> str:
    if selector.name:
        return f"name:{selector.name}"
    match_labels = selector.label_selector.match_labels
    if match_labels:
        first = min(match_labels)
        return f"label:{first}={match_labels[first]}"
    return ""


def _selector_key(namespace: str, api_version: str, kind: str, narrowed: str) -> str:
    # '|' appears in none of these (names and label keys are DNS subdomains and prefixes;
    # label values are alphanumeric with '-', '_', '.'; apiVersion is group/version).
    return f"{namespace}|{api_version}|{kind}|{narrowed}"


def best_policy(policies: Iterable[Policy], template: meta_pb2.Unstructured) -> Policy | None:
    """Highest explicit priority, then most specific match, then smallest name."""
    best: Policy | None = None
    best_key: tuple[int, int, str] | None = None
    for policy in policies:
        match = policy_match(policy, template)
        if match == Match.NONE:
            continue
        # Negated so that min() orders: priority desc, match desc, name asc.
        key = (-policy.spec.priority, -int(match), policy.metadata.name)
        if best_key is None or key < best_key:
            best, best_key = policy, key
    return best


def _preempts(candidate: Policy, claimed: Policy) -> bool:
    if candidate.spec.preemption != PREEMPT_ALWAYS:
        return False
    candidate_pp = _kind_of(candidate) == "PropagationPolicy"
    claimed_pp = _kind_of(claimed) == "PropagationPolicy"
    if candidate_pp and not claimed_pp:
        return True
    if candidate_pp != claimed_pp:
        return False
    return candidate.spec.priority > claimed.spec.priority


def choose_policy(
    template: meta_pb2.Unstructured,
    propagation_policies: Sequence[policy_pb2.PropagationPolicy],
    cluster_policies: Sequence[policy_pb2.ClusterPropagationPolicy],
    claim: Claim | None,
    preemption: bool = False,
) -> Policy | None:
    """The policy that claims the template now (see the module docstring for the rules)."""
    best = best_policy(propagation_policies, template) or best_policy(cluster_policies, template)
    if claim is None:
        return best
    pool: Sequence[Policy] = propagation_policies if claim.kind == "PropagationPolicy" else cluster_policies
    current = next((p for p in pool if is_claimed_by(claim, p)), None)
    if current is None or policy_match(current, template) == Match.NONE:
        return best
    if preemption and best is not None and best is not current and _preempts(best, current):
        return best
    return current


def namespace_skipped(namespace: str, skipped: Sequence[str] = DEFAULT_SKIPPED_NAMESPACES) -> bool:
    """Karmada's own namespaces, execution namespaces, and those matching a skip pattern (full match)."""
    if not namespace:
        return False
    if namespace in RESERVED_NAMESPACES or keys.cluster_of_execution_namespace(namespace) is not None:
        return True
    return any(re.fullmatch(pattern, namespace) for pattern in skipped)


def without_claim(labels: Mapping[str, str], annotations: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations with every policy claim removed."""
    return ({k: v for k, v in labels.items() if k not in CLAIM_LABELS},
            {k: v for k, v in annotations.items() if k not in CLAIM_ANNOTATIONS})
