"""An apiVersion and a kind as Kubernetes spells them: the names a template is stored under and a
policy's selectors start informers for, so nothing else is taken for one (a kind of 10,000
characters, or `Foo Bar`, would become an etcd prefix, a watch and metric labels).

apiVersion is `v1`-style in the core group or `<group>/<version>`, the group a DNS-1123
subdomain and the version a DNS-1035 label (what Kubernetes requires of a CRD's group and
versions); a kind starts with a letter and holds letters, digits and dashes, at most 63
characters, as a CRD's kind must once lowercased.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from flotilla.api import registry
from flotilla.api.codec import FieldError
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.api.v1.policy_pb2 import ClusterPropagationPolicy, PropagationPolicy
from services.webhook.rules.fields import child, index, invalid

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KIND = re.compile(r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$")
_MAX_LABEL, _MAX_SUBDOMAIN = 63, 253


def api_version_problem(api_version: str) -> str:
    """Why this is no apiVersion ("" when it is one; an empty one is `required`'s to say)."""
    if not api_version:
        return ""
    group, sep, version = api_version.rpartition("/")
    if sep and not _subdomain(group):
        return "the group must be a lowercase DNS-1123 subdomain (e.g. apps, example.com)"
    if not (len(version) <= _MAX_LABEL and _DNS1035_LABEL.match(version)):
        return "the version must be a lowercase DNS-1035 label (e.g. v1, v1beta1)"
    return ""


def kind_problem(kind: str) -> str:
    if not kind or (len(kind) <= _MAX_LABEL and _KIND.match(kind)):
        return ""
    return f"must start with a letter and hold only letters, digits and '-', at most {_MAX_LABEL} characters"


def _subdomain(group: str) -> bool:
    return 0 < len(group) <= _MAX_SUBDOMAIN and all(
        len(label) <= _MAX_LABEL and _DNS1123_LABEL.match(label) for label in group.split("."))


def _check(path: str, api_version: str, kind: str) -> Iterator[FieldError]:
    if problem := api_version_problem(api_version):
        yield invalid(child(path, "apiVersion"), api_version, problem)
    if problem := kind_problem(kind):
        yield invalid(child(path, "kind"), kind, problem)


def template_kind_problems(template: Unstructured) -> Iterator[FieldError]:
    yield from _check("", template.api_version, template.kind)


def selector_kind_problems(policy: PropagationPolicy | ClusterPropagationPolicy) -> Iterator[FieldError]:
    for i, selector in enumerate(policy.spec.resource_selectors):
        path = index("spec.resourceSelectors", i)
        yield from _check(path, selector.api_version, selector.kind)
        group, _ = registry.split_api_version(selector.api_version)
        if registry.is_karmada_group(group):
            # Karmada ignores such a selector; refused, since a selector that selects nothing is a mistake.
            yield FieldError(child(path, "apiVersion"), f"{selector.kind} ({group}) is a kind of Karmada's API, "
                             "which is never propagated (Karmada's detector skips every karmada.io group)")
