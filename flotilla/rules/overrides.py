"""Karmada's override manager (pkg/util/overridemanager) as pure functions: what a member
receives of a template is the template changed by the OverridePolicies and
ClusterOverridePolicies that select it and target that cluster.

Why each choice, as Karmada makes it:
- Order: every ClusterOverridePolicy before any OverridePolicy (a namespace's own policy has the
  last word), and within each kind by implicit priority — a policy without selectors (every
  resource), then kind-only, label-selector, and last name selectors — then by name. The last
  applied wins, so the most specific policy decides.
- A policy's rules apply in their order when their `targetCluster` matches the cluster (no
  `targetCluster`: every cluster). The deprecated `spec.targetCluster` + `spec.overriders` are
  one rule, read only when `overrideRules` is empty.
- Within a rule: image, command, args, labels, annotations, field overriders, then plaintext.
- Any failure (a path that is not there, an image that does not parse) fails the whole
  manifest for that cluster: a half-overridden copy could pull the wrong image.
- What was applied is recorded as Karmada records it on the Work
  (`policy.karmada.io/applied-cluster-overrides`, `policy.karmada.io/applied-overrides`): a JSON
  list of `{policyName, overriders}`, sorted by policy name.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from flotilla.api import codec
from flotilla.api.selectors import cluster_affinity_matches, label_selector_matches
from flotilla.api.v1 import cluster_pb2, policy_pb2
from flotilla.rules.resource_selection import Match

APPLIED_OVERRIDES_ANNOTATION = "policy.karmada.io/applied-overrides"
APPLIED_CLUSTER_OVERRIDES_ANNOTATION = "policy.karmada.io/applied-cluster-overrides"
OVERRIDE_ANNOTATIONS = (APPLIED_OVERRIDES_ANNOTATION, APPLIED_CLUSTER_OVERRIDES_ANNOTATION)

ADD, REMOVE, REPLACE = "add", "remove", "replace"
OPERATORS = (ADD, REMOVE, REPLACE)
IMAGE_COMPONENTS = ("Registry", "Repository", "Tag")

OverridePolicy = policy_pb2.OverridePolicy | policy_pb2.ClusterOverridePolicy

# Where each workload kind keeps its containers (imageOverrider without predicate, command and args).
_POD_SPEC: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}

_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_DIGEST = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$")


class OverrideError(ValueError):
    """A policy that cannot be applied to this manifest; the message names the policy and why."""


@dataclass(frozen=True)
class AppliedRule:
    policy: str
    overriders: policy_pb2.Overriders


@dataclass
class Overridden:
    manifest: dict[str, Any]
    cluster_overrides: list[AppliedRule] = field(default_factory=list)
    overrides: list[AppliedRule] = field(default_factory=list)

    def annotations(self) -> dict[str, str]:
        """The Work annotations Karmada records (absent when nothing applied)."""
        out = {}
        for name, applied in ((APPLIED_CLUSTER_OVERRIDES_ANNOTATION, self.cluster_overrides),
                              (APPLIED_OVERRIDES_ANNOTATION, self.overrides)):
            if applied:
                out[name] = applied_json(applied)
        return out


def applied_json(applied: Sequence[AppliedRule]) -> str:
    """Karmada's AppliedOverrides.MarshalJSON: `[{"policyName", "overriders"}]` by policy name."""
    items = sorted(applied, key=lambda a: a.policy)
    return json.dumps([{"policyName": a.policy, "overriders": codec.to_dict(a.overriders)} for a in items],
                      separators=(",", ":"), ensure_ascii=False)


# -- which rules ----------------------------------------------------------------------------------

def _selector_match(selector: policy_pb2.ResourceSelector, manifest: dict[str, Any]) -> Match:
    """Karmada's ResourceMatches, on the manifest: a name picks one object, a label selector the
    objects it selects, neither every object of the kind."""
    meta = manifest.get("metadata") or {}
    if selector.api_version != manifest.get("apiVersion") or selector.kind != manifest.get("kind"):
        return Match.NONE
    if selector.namespace and selector.namespace != meta.get("namespace", ""):
        return Match.NONE
    if selector.name:
        return Match.NAME if selector.name == meta.get("name") else Match.NONE
    if not selector.HasField("label_selector"):
        return Match.ALL
    labels = meta.get("labels") or {}
    return Match.LABEL_SELECTOR if label_selector_matches(selector.label_selector, labels) else Match.NONE


def implicit_priority(policy: OverridePolicy, manifest: dict[str, Any]) -> Match:
    """How specifically the policy selects the manifest; a policy without selectors selects
    everything (Karmada's PriorityMatchAll); NONE when it does not select it."""
    selectors = policy.spec.resource_selectors
    if not selectors:
        return Match.ALL
    return max((_selector_match(s, manifest) for s in selectors), default=Match.NONE)


def _rules(spec: policy_pb2.OverrideSpec) -> list[policy_pb2.RuleWithCluster]:
    if spec.override_rules:
        return list(spec.override_rules)
    rule = policy_pb2.RuleWithCluster(overriders=spec.overriders)
    if spec.HasField("target_cluster"):
        rule.target_cluster.CopyFrom(spec.target_cluster)
    return [rule]


def matching_rules(policies: Iterable[OverridePolicy], manifest: dict[str, Any],
                   cluster: cluster_pb2.Cluster) -> list[AppliedRule]:
    """The rules of `policies` (of one kind) that apply to the manifest in `cluster`, in the
    order they apply: by implicit priority, then name, then rule order."""
    selecting = [(priority, p) for p in policies if (priority := implicit_priority(p, manifest)) is not Match.NONE]
    selecting.sort(key=lambda pair: (pair[0], pair[1].metadata.name))
    return [AppliedRule(p.metadata.name, rule.overriders) for _, p in selecting for rule in _rules(p.spec)
            if not rule.HasField("target_cluster") or cluster_affinity_matches(rule.target_cluster, cluster)]


def apply_overrides(manifest: dict[str, Any], cluster: cluster_pb2.Cluster,
                    cluster_policies: Iterable[policy_pb2.ClusterOverridePolicy],
                    policies: Iterable[policy_pb2.OverridePolicy]) -> Overridden:
    """The manifest as `cluster` receives it, with what applied: a changed copy (`manifest` is
    never changed), or `manifest` itself when no rule applies — the common case, which every
    Work of a failover goes through. OverridePolicies count only in the manifest's own
    namespace (none for a cluster-scoped object). Raises OverrideError."""
    namespace = (manifest.get("metadata") or {}).get("namespace", "")
    own = [p for p in policies if namespace and p.metadata.namespace == namespace]
    cluster_rules = matching_rules(cluster_policies, manifest, cluster)
    rules = matching_rules(own, manifest, cluster)
    if not cluster_rules and not rules:
        return Overridden(manifest)
    result = copy.deepcopy(manifest)
    done = Overridden(result)
    for matched, applied, what in ((cluster_rules, done.cluster_overrides, "ClusterOverridePolicy"),
                                   (rules, done.overrides, "OverridePolicy")):
        for rule in matched:
            try:
                apply_overriders(result, rule.overriders)
            except (ValueError, KeyError, IndexError, TypeError, yaml.YAMLError) as e:
                raise OverrideError(f"{what} {rule.policy} for cluster {cluster.metadata.name}: {e}") from None
            applied.append(rule)
    return done


def apply_overriders(obj: dict[str, Any], overriders: policy_pb2.Overriders) -> None:
    """One rule's overriders, in Karmada's order (applyPolicyOverriders), in place."""
    for image in overriders.image_overrider:
        json_patch(obj, image_patches(obj, image))
    for target, command_args in (("command", overriders.command_overrider), ("args", overriders.args_overrider)):
        for overrider in command_args:
            json_patch(obj, command_args_patches(obj, target, overrider))
    for name, label_annotation in (("labels", overriders.labels_overrider),
                                   ("annotations", overriders.annotations_overrider)):
        for la in label_annotation:
            json_patch(obj, label_annotation_patches(obj, name, la))
    for fo in overriders.field_overrider:
        apply_field_overrider(obj, fo)
    json_patch(obj, [{"op": p.operator, "path": p.path, **_value(p.value)} for p in overriders.plaintext])


def _value(raw: bytes) -> dict[str, Any]:
    return {"value": json.loads(raw)} if raw else {}


# -- imageOverrider -------------------------------------------------------------------------------

@dataclass
class Image:
    """An image reference split as Karmada's imageparser does."""

    hostname: str
    repository: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        full = f"{self.hostname}/{self.repository}" if self.hostname else self.repository
        if self.tag:
            return f"{full}:{self.tag}"
        return f"{full}@{self.digest}" if self.digest else full

    def tag_or_digest(self) -> str:
        return self.tag or self.digest

    def set_tag_or_digest(self, value: str) -> None:
        if _TAG.match(value):
            self.tag, self.digest = value, ""
        elif _DIGEST.match(value):
            self.digest, self.tag = value, ""


def parse_image(image: str) -> Image:
    """`[host[:port]/]repository[:tag][@digest]`; the first segment is a host when it holds a
    `.` or `:` or is `localhost` (distribution's reference.SplitHostname)."""
    if not image or image != image.strip() or " " in image:
        raise OverrideError(f'invalid image "{image}"')
    name, _, digest = image.partition("@")
    tag = ""
    last = name.rfind("/")
    colon = name.rfind(":")
    if colon > last:
        name, tag = name[:colon], name[colon + 1:]
    if not name or (tag and not _TAG.match(tag)) or (digest and not _DIGEST.match(digest)):
        raise OverrideError(f'invalid image "{image}"')
    first, slash, rest = name.partition("/")
    host, repository = (first, rest) if slash and ("." in first or ":" in first or first == "localhost") \
        else ("", name)
    if not _REPOSITORY.match(repository):
        raise OverrideError(f'invalid image "{image}"')
    return Image(host, repository, tag, digest)


def override_image(image: str, overrider: policy_pb2.ImageOverrider) -> str:
    parsed = parse_image(image)
    op, value = overrider.operator, overrider.value
    if overrider.component == "Registry":
        parsed.hostname = {ADD: parsed.hostname + value, REPLACE: value, REMOVE: ""}.get(op, parsed.hostname)
    elif overrider.component == "Repository":
        parsed.repository = {ADD: parsed.repository + value, REPLACE: value, REMOVE: ""}.get(op, parsed.repository)
    elif overrider.component == "Tag":
        if op == ADD:
            parsed.set_tag_or_digest(parsed.tag_or_digest() + value)
        elif op == REPLACE:
            parsed.set_tag_or_digest(value)
        elif op == REMOVE:
            if parsed.tag:
                parsed.tag = ""
            else:
                parsed.digest = ""
    else:
        raise OverrideError(f"unsupported image component({overrider.component})")
    return str(parsed)


def image_patches(obj: dict[str, Any], overrider: policy_pb2.ImageOverrider) -> list[dict[str, Any]]:
    """Without a predicate: every container of a known workload kind; with one: the image at its path."""
    if overrider.HasField("predicate"):
        path = overrider.predicate.path
        current = get_pointer(obj, path)
        if not isinstance(current, str):
            raise OverrideError(f"the value at predicate path({path}) is not a string")
        return [{"op": REPLACE, "path": path, "value": override_image(current, overrider)}]
    prefix = _POD_SPEC.get(obj.get("kind", ""))
    if prefix is None:
        return []
    containers = _dig(obj, (*prefix, "containers"))
    return [{"op": REPLACE, "path": "/" + "/".join((*prefix, "containers", str(i), "image")),
             "value": override_image(str(c.get("image", "")), overrider)}
            for i, c in enumerate(containers if isinstance(containers, list) else [])]


def _dig(obj: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


# -- commandOverrider / argsOverrider -------------------------------------------------------------

def command_args_patches(obj: dict[str, Any], target: str,
                         overrider: policy_pb2.CommandArgsOverrider) -> list[dict[str, Any]]:
    """`add` appends, `remove` drops every listed value, of the named container's command or args."""
    prefix = _POD_SPEC.get(obj.get("kind", ""))
    containers = _dig(obj, (*prefix, "containers")) if prefix is not None else None
    if prefix is None or not isinstance(containers, list):
        return []
    patches = []
    for i, container in enumerate(containers):
        if not isinstance(container, dict) or container.get("name") != overrider.container_name:
            continue
        path = "/" + "/".join((*prefix, "containers", str(i), target))
        current = container.get(target)
        if current is None:
            patches.append({"op": ADD, "path": path, "value": _command_args([], overrider)})
        else:
            patches.append({"op": REPLACE, "path": path, "value": _command_args([str(v) for v in current], overrider)})
    return patches


def _command_args(current: list[str], overrider: policy_pb2.CommandArgsOverrider) -> list[str]:
    if overrider.operator == ADD:
        return [*current, *overrider.value]
    if overrider.operator == REMOVE:
        gone = set(overrider.value)
        return [v for v in current if v not in gone]
    return current


# -- labelsOverrider / annotationsOverrider -------------------------------------------------------

def label_annotation_patches(obj: dict[str, Any], which: str,
                             overrider: policy_pb2.LabelAnnotationOverrider) -> list[dict[str, Any]]:
    """`add` sets (creating the map), `replace` and `remove` touch only keys already there."""
    meta = obj.setdefault("metadata", {})
    patches = []
    for k in sorted(overrider.value):
        current = meta.get(which)
        if overrider.operator in (REMOVE, REPLACE):
            if not isinstance(current, dict) or k not in current:
                continue
        elif overrider.operator == ADD and not isinstance(current, dict):
            meta[which] = {}
        patch: dict[str, Any] = {"op": overrider.operator, "path": f"/metadata/{which}/{escape_token(k)}"}
        if overrider.operator != REMOVE:
            patch["value"] = overrider.value[k]
        patches.append(patch)
    return patches


# -- fieldOverrider ---------------------------------------------------------------------------------

def apply_field_overrider(obj: dict[str, Any], overrider: policy_pb2.FieldOverrider) -> None:
    """Patch a string field holding a JSON or YAML document (a ConfigMap's data), in place."""
    current = get_pointer(obj, overrider.field_path)
    if not isinstance(current, str):
        raise OverrideError(f"the value at fieldPath({overrider.field_path}) is not a string")
    if overrider.yaml:
        document = yaml.safe_load(current)
        json_patch_value = _patched(document, overrider.yaml)
        new = yaml.safe_dump(json_patch_value, default_flow_style=False, sort_keys=True, allow_unicode=True)
    elif overrider.json:
        new = json.dumps(_patched(json.loads(current), overrider.json), separators=(",", ":"), ensure_ascii=False)
    else:
        return
    set_pointer(obj, overrider.field_path, new)


def _patched(document: Any, operations: Iterable[policy_pb2.PatchOperation]) -> Any:
    holder = {"doc": document}
    json_patch(holder, [{"op": o.operator, "path": "/doc" + o.sub_path, **_value(o.value)} for o in operations])
    return holder["doc"]


# -- RFC 6901 pointers and RFC 6902 add/remove/replace ----------------------------------------------

def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def parse_pointer(pointer: str) -> list[str]:
    """`/a/b~1c` -> ["a", "b/c"]; "" is the whole document."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise OverrideError(f'JSON pointer "{pointer}" must start with "/"')
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, pointer: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise OverrideError(f'"{token}" is not an array index in "{pointer}"')
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise OverrideError(f'index {i} out of range in "{pointer}"')
    return i


def _child(parent: Any, token: str, pointer: str) -> Any:
    if isinstance(parent, dict):
        if token not in parent:
            raise OverrideError(f'"{pointer}": no such field "{token}"')
        return parent[token]
    if isinstance(parent, list):
        return parent[_index(parent, token, pointer, allow_end=False)]
    raise OverrideError(f'"{pointer}": cannot descend into a {type(parent).__name__}')


def get_pointer(doc: Any, pointer: str) -> Any:
    for token in parse_pointer(pointer):
        doc = _child(doc, token, pointer)
    return doc


def set_pointer(doc: Any, pointer: str, value: Any) -> None:
    json_patch(doc, [{"op": REPLACE, "path": pointer, "value": value}])


def json_patch(doc: dict[str, Any], patches: Iterable[dict[str, Any]]) -> None:
    """Apply add/remove/replace operations in place, strictly: the parent must exist, and
    `remove`/`replace` need the target (evanphx/json-patch, which Karmada uses)."""
    for patch in patches:
        op, pointer = patch.get("op"), patch.get("path", "")
        tokens = parse_pointer(pointer)
        if not tokens:
            raise OverrideError(f"cannot {op} the whole document")
        parent = doc
        for token in tokens[:-1]:
            parent = _child(parent, token, pointer)
        last = tokens[-1]
        value = copy.deepcopy(patch.get("value"))
        if op not in OPERATORS:
            raise OverrideError(f'unsupported operator "{op}"')
        if isinstance(parent, dict):
            if op != ADD and last not in parent:
                raise OverrideError(f'{op} "{pointer}": no such field "{last}"')
            if op == REMOVE:
                del parent[last]
            else:
                parent[last] = value
        elif isinstance(parent, list):
            i = _index(parent, last, pointer, allow_end=op == ADD)
            if op == ADD:
                parent.insert(i, value)
            elif op == REMOVE:
                del parent[i]
            else:
                parent[i] = value
        else:
            raise OverrideError(f'{op} "{pointer}": the parent is a {type(parent).__name__}')
