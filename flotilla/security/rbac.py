"""Kubernetes RBAC, evaluated as the Kubernetes API server evaluates it: who may do what.

The objects are Kubernetes' own (`rbac.authorization.k8s.io/v1` Role, ClusterRole,
RoleBinding, ClusterRoleBinding, applied with `flotillactl apply` and stored like any
template), read here as plain dicts. The rules (plugin/pkg/auth/authorizer/rbac in Kubernetes):

- Deny by default; a request is allowed when one rule of one role bound to the user allows it.
  A ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding grants its Role (of its
  own namespace) or ClusterRole in the binding's namespace only.
- A subject matches by user name (`User`), by one of the user's groups (`Group`), or as a
  service account (`system:serviceaccount:<namespace>:<name>`).
- A rule matches a verb (or `*`), an API group (or `*`; the core group is ""), a resource
  (`*`, the resource, `resource/subresource`, or `*/subresource`) and, when it names
  resourceNames, the request's object name (so a named rule never allows create or list).
- A ClusterRole with an aggregationRule holds the rules of every ClusterRole whose labels one of
  its selectors matches.

The bootstrap policy is built in (`BOOTSTRAP`), not stored: `cluster-admin` bound to the
`system:masters` group, Kubernetes' `admin`, `edit` and `view` (each also aggregating the
ClusterRoles labelled `rbac.authorization.k8s.io/aggregate-to-<name>: "true"`, as Kubernetes'),
and `system:auth-delegator` (asking whether others may do something) bound to the plane's
services (`system:flotilla:services`),
so no write to the store can take the administrators' rights away or widen the built-in roles'
own rules. Stored objects under those names are ignored, and admission refuses them.

Pure: objects in, a decision out (tests/unit/test_rbac.py is the table).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ALL = "*"
GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING = "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"
KINDS = (ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING)
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
AGGREGATE_LABEL = "rbac.authorization.k8s.io/aggregate-to-"


@dataclass(frozen=True)
class User:
    """An authenticated caller: the certificate's common name and organizations (Kubernetes'
    x509 authenticator), with `system:authenticated`."""

    name: str
    groups: frozenset[str] = frozenset()

    @classmethod
    def of(cls, name: str, groups: Iterable[str] = ()) -> User:
        return cls(name, frozenset(groups) | {AUTHENTICATED})


@dataclass(frozen=True)
class Request:
    """What is asked: a verb on a resource (with its API group and subresource), in a namespace
    ("" at the cluster scope), for one named object or ("") for none."""

    verb: str
    api_group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Rule:
    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, verbs: Iterable[str], api_groups: Iterable[str], resources: Iterable[str],
           resource_names: Iterable[str] = ()) -> Rule:
        return cls(frozenset(verbs), frozenset(api_groups), frozenset(resources), frozenset(resource_names))

    def allows(self, request: Request) -> bool:
        return (_verb_matches(self, request.verb) and _group_matches(self, request.api_group)
                and _resource_matches(self, request) and _name_matches(self, request.name))


def _verb_matches(rule: Rule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def _group_matches(rule: Rule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def _resource_matches(rule: Rule, request: Request) -> bool:
    if ALL in rule.resources or request.combined_resource in rule.resources:
        return True
    return bool(request.subresource) and f"*/{request.subresource}" in rule.resources


def _name_matches(rule: Rule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


@dataclass(frozen=True)
class Selector:
    """A label selector of an aggregationRule: matchLabels and matchExpressions."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for key, operator, values in self.match_expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class RoleDef:
    """A Role (namespace set) or ClusterRole (namespace "")."""

    name: str
    namespace: str = ""
    rules: tuple[Rule, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    aggregation: tuple[Selector, ...] = ()


@dataclass(frozen=True)
class Subject:
    kind: str  # User, Group or ServiceAccount
    name: str
    namespace: str = ""

    def matches(self, user: User) -> bool:
        if self.kind == "User":
            return self.name == user.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            return user.name == f"{SERVICE_ACCOUNT_PREFIX}{self.namespace}:{self.name}"
        return False


@dataclass(frozen=True)
class BindingDef:
    """A RoleBinding (namespace set) or ClusterRoleBinding (namespace "")."""

    name: str
    role_kind: str  # Role or ClusterRole
    role_name: str
    subjects: tuple[Subject, ...]
    namespace: str = ""

    def applies_to(self, user: User) -> bool:
        return any(s.matches(user) for s in self.subjects)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


class Policy:
    """The roles and bindings in force: the bootstrap policy and the stored objects."""

    def __init__(self, roles: Iterable[RoleDef] = (), bindings: Iterable[BindingDef] = (),
                 bootstrap: bool = True) -> None:
        builtin_roles, builtin_bindings = BOOTSTRAP if bootstrap else ((), ())
        builtin_names = {r.name for r in builtin_roles} | {b.name for b in builtin_bindings}
        stored = [r for r in roles if r.namespace or r.name not in builtin_names]
        self.cluster_roles = {r.name: r for r in (*stored, *builtin_roles) if not r.namespace}
        self.roles = {(r.namespace, r.name): r for r in stored if r.namespace}
        self.cluster_bindings = [*builtin_bindings, *(b for b in bindings
                                                      if not b.namespace and b.name not in builtin_names)]
        self.bindings = [b for b in bindings if b.namespace]
        self._aggregated: dict[str, tuple[Rule, ...]] = {}

    def cluster_role_rules(self, name: str) -> tuple[Rule, ...]:
        """A ClusterRole's rules with those it aggregates, followed through roles that aggregate
        in turn (Kubernetes' controller writes them into each role, so they chain the same way)."""
        if name not in self._aggregated:
            self._aggregated[name] = tuple(self._collect(name, set()))
        return self._aggregated[name]

    def _collect(self, name: str, seen: set[str]) -> list[Rule]:
        role = self.cluster_roles.get(name)
        if role is None or name in seen:
            return []
        seen.add(name)
        rules = list(role.rules)
        for other in sorted(self.cluster_roles.values(), key=lambda r: r.name):
            if other.name != name and any(s.matches(other.labels) for s in role.aggregation):
                rules.extend(self._collect(other.name, seen))
        return rules

    def _role_rules(self, binding: BindingDef) -> tuple[Rule, ...]:
        if binding.role_kind == CLUSTER_ROLE:
            return self.cluster_role_rules(binding.role_name)
        if binding.role_kind == ROLE and binding.namespace:
            role = self.roles.get((binding.namespace, binding.role_name))
            return role.rules if role is not None else ()
        return ()

    def rules_for(self, user: User, namespace: str) -> list[tuple[BindingDef, Rule]]:
        """Every rule that applies to the user in the namespace ("" : at the cluster scope)."""
        found = [(b, r) for b in self.cluster_bindings if b.applies_to(user) for r in self._role_rules(b)]
        if namespace:
            found += [(b, r) for b in self.bindings
                      if b.namespace == namespace and b.applies_to(user) for r in self._role_rules(b)]
        return found

    def authorize(self, user: User, request: Request) -> Decision:
        for binding, rule in self.rules_for(user, request.namespace):
            if rule.allows(request):
                kind = "ClusterRoleBinding" if not binding.namespace else "RoleBinding"
                where = f" of namespace {binding.namespace!r}" if binding.namespace else ""
                return Decision(True, f'{kind} "{binding.name}"{where} of {binding.role_kind} '
                                      f'"{binding.role_name}"')
        return Decision(False, forbidden(user, request))


def forbidden(user: User, request: Request) -> str:
    """Kubernetes' wording of a denial."""
    scope = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    return (f'User "{user.name}" cannot {request.verb} resource "{request.combined_resource}" '
            f'in API group "{request.api_group}" {scope}')


def covers(owner: Sequence[Rule], requested: Iterable[Rule]) -> list[Request]:
    """What `requested` grants that `owner` does not (empty when owner covers it), as
    Kubernetes' escalation check (validation.Covers): each requested rule is broken into one
    verb, group, resource and name at a time, and a `*` asked for is covered only by a `*`."""
    missing = []
    for rule in requested:
        names = sorted(rule.resource_names) or [""]
        for verb in sorted(rule.verbs):
            for group in sorted(rule.api_groups):
                for resource in sorted(rule.resources):
                    for name in names:
                        if not any(_literally_covers(o, verb, group, resource, name) for o in owner):
                            missing.append(Request(verb, group, resource, name=name))
    return missing


def _literally_covers(owner: Rule, verb: str, group: str, resource: str, name: str) -> bool:
    resource_ok = ALL in owner.resources or resource in owner.resources or (
        "/" in resource and f"*/{resource.split('/', 1)[1]}" in owner.resources)
    return (_verb_matches(owner, verb) and _group_matches(owner, group) and resource_ok
            and (not owner.resource_names or name in owner.resource_names))


# -- reading the objects --------------------------------------------------------------------


class PolicyError(ValueError):
    """An RBAC object that does not say what a role or binding must; `path` names the field."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _strings(value: Any, path: str, required: bool = False) -> tuple[str, ...]:
    if value is None:
        if required:
            raise PolicyError(path, "Required value")
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(path, "must be a list of strings")
    return tuple(value)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PolicyError(path, "must be an object")
    return value


def _items(value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object of a list field, with its path (`rules[2]`)."""
    if value is None:
        return
    if not isinstance(value, list):
        raise PolicyError(path, "must be a list")
    for i, item in enumerate(value):
        yield f"{path}[{i}]", _mapping(item, f"{path}[{i}]")


def rules_of(doc: Mapping[str, Any]) -> tuple[Rule, ...]:
    rules = []
    for path, item in _items(doc.get("rules"), "rules"):
        verbs = _strings(item.get("verbs"), f"{path}.verbs", required=True)
        if not verbs:
            raise PolicyError(f"{path}.verbs", "Required value: at least one verb")
        urls = _strings(item.get("nonResourceURLs"), f"{path}.nonResourceURLs")
        groups = _strings(item.get("apiGroups"), f"{path}.apiGroups")
        resources = _strings(item.get("resources"), f"{path}.resources")
        if not urls and not resources:
            raise PolicyError(f"{path}.resources", "Required value: resource rules must name resources")
        if resources and not groups:
            raise PolicyError(f"{path}.apiGroups", 'Required value: resource rules must supply apiGroups ("" is core)')
        if resources:
            rules.append(Rule.of(verbs, groups, resources,
                                 _strings(item.get("resourceNames"), f"{path}.resourceNames")))
    return tuple(rules)


def _selector(raw: Any, path: str) -> Selector:
    raw = _mapping(raw, path)
    labels = _mapping(raw.get("matchLabels"), f"{path}.matchLabels")
    if not all(isinstance(v, str) for v in labels.values()):
        raise PolicyError(f"{path}.matchLabels", "values must be strings")
    expressions = []
    for epath, expr in _items(raw.get("matchExpressions"), f"{path}.matchExpressions"):
        operator = expr.get("operator")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise PolicyError(f"{epath}.operator", "must be In, NotIn, Exists or DoesNotExist")
        key = expr.get("key")
        if not isinstance(key, str) or not key:
            raise PolicyError(f"{epath}.key", "Required value")
        expressions.append((key, operator, _strings(expr.get("values"), f"{epath}.values")))
    return Selector(tuple(sorted(labels.items())), tuple(expressions))


def role_of(doc: Mapping[str, Any]) -> RoleDef:
    """A Role or ClusterRole document as a RoleDef; PolicyError names what is wrong."""
    meta = _mapping(doc.get("metadata"), "metadata")
    aggregation = _mapping(doc.get("aggregationRule"), "aggregationRule")
    selectors = [_selector(raw, path) for path, raw in
                 _items(aggregation.get("clusterRoleSelectors"), "aggregationRule.clusterRoleSelectors")]
    if selectors and doc.get("kind") != CLUSTER_ROLE:
        raise PolicyError("aggregationRule", "only a ClusterRole aggregates")
    labels = _mapping(meta.get("labels"), "metadata.labels")
    return RoleDef(str(meta.get("name") or ""), str(meta.get("namespace") or "") if doc.get("kind") == ROLE else "",
                   rules_of(doc), {str(k): str(v) for k, v in labels.items()}, tuple(selectors))


def binding_of(doc: Mapping[str, Any]) -> BindingDef:
    """A RoleBinding or ClusterRoleBinding document as a BindingDef; PolicyError names what is wrong."""
    meta = _mapping(doc.get("metadata"), "metadata")
    namespaced = doc.get("kind") == ROLE_BINDING
    ref = _mapping(doc.get("roleRef"), "roleRef")
    if ref.get("apiGroup") != GROUP:
        raise PolicyError("roleRef.apiGroup", f'Unsupported value: must be "{GROUP}"')
    allowed_kinds = (ROLE, CLUSTER_ROLE) if namespaced else (CLUSTER_ROLE,)
    if ref.get("kind") not in allowed_kinds:
        raise PolicyError("roleRef.kind", f"Unsupported value: must be {' or '.join(allowed_kinds)}")
    if not isinstance(ref.get("name"), str) or not ref["name"]:
        raise PolicyError("roleRef.name", "Required value")
    subjects = []
    for path, raw in _items(doc.get("subjects"), "subjects"):
        kind, name = raw.get("kind"), raw.get("name")
        if kind not in ("User", "Group", "ServiceAccount"):
            raise PolicyError(f"{path}.kind", "Unsupported value: must be User, Group or ServiceAccount")
        if not isinstance(name, str) or not name:
            raise PolicyError(f"{path}.name", "Required value")
        namespace = raw.get("namespace") or ""
        if kind == "ServiceAccount" and not namespace:
            namespace = str(meta.get("namespace") or "") if namespaced else ""
            if not namespace:
                raise PolicyError(f"{path}.namespace", "Required value: a ServiceAccount subject needs one")
        subjects.append(Subject(kind, name, str(namespace)))
    return BindingDef(str(meta.get("name") or ""), str(ref["kind"]), ref["name"], tuple(subjects),
                      str(meta.get("namespace") or "") if namespaced else "")


# -- the bootstrap policy -------------------------------------------------------------------

_READ = ("get", "list", "watch")
_WRITE = ("create", "update", "patch", "delete", "deletecollection")
# What a namespace's users work with: Karmada's namespaced kinds and the common templates.
_KARMADA_NAMESPACED = (
    ("policy.karmada.io", ("propagationpolicies", "overridepolicies")),
    ("work.karmada.io", ("resourcebindings", "works")),
)
_WORKLOADS = (
    ("", ("pods", "services", "configmaps", "endpoints", "persistentvolumeclaims", "serviceaccounts", "events")),
    ("apps", ("deployments", "statefulsets", "daemonsets", "replicasets")),
    ("batch", ("jobs", "cronjobs")),
    ("autoscaling", ("horizontalpodautoscalers",)),
    ("networking.k8s.io", ("ingresses", "networkpolicies")),
    ("policy", ("poddisruptionbudgets",)),
    ("coordination.k8s.io", ("leases",)),
)
_STATUS = tuple((group, tuple(f"{r}/status" for r in resources)) for group, resources in _KARMADA_NAMESPACED)


def _rules(groups: Iterable[tuple[str, tuple[str, ...]]], verbs: Sequence[str]) -> tuple[Rule, ...]:
    return tuple(Rule.of(verbs, (group,), resources) for group, resources in groups)


def _aggregating(name: str) -> tuple[Selector, ...]:
    return (Selector(((f"{AGGREGATE_LABEL}{name}", "true"),)),)


_VIEW_RULES = _rules((*_KARMADA_NAMESPACED, *_STATUS, *_WORKLOADS), _READ)
_EDIT_RULES = (*_VIEW_RULES, *_rules((*_KARMADA_NAMESPACED, *_WORKLOADS, ("", ("secrets",))), _WRITE),
               Rule.of(_READ, ("",), ("secrets",)))
_ADMIN_RULES = (*_EDIT_RULES, Rule.of((*_READ, *_WRITE), (GROUP,), ("roles", "rolebindings")))

# The plane's services: each asks the webhook whether a caller of its own gRPC API may call it
# (flotilla.runtime.delegated_authorization), as Kubernetes' components do with SubjectAccessReviews.
SERVICES_GROUP = "system:flotilla:services"
AUTH_DELEGATOR = "system:auth-delegator"
ACCESS_REVIEW = ("authorization.k8s.io", "subjectaccessreviews")

BOOTSTRAP: tuple[tuple[RoleDef, ...], tuple[BindingDef, ...]] = (
    (
        RoleDef("cluster-admin", rules=(Rule.of((ALL,), (ALL,), (ALL,)),)),
        RoleDef(AUTH_DELEGATOR, rules=(Rule.of(("create",), (ACCESS_REVIEW[0],), (ACCESS_REVIEW[1],)),)),
        RoleDef("admin", rules=_ADMIN_RULES, aggregation=_aggregating("admin")),
        RoleDef("edit", rules=_EDIT_RULES, aggregation=_aggregating("edit"),
                labels={f"{AGGREGATE_LABEL}admin": "true"}),
        RoleDef("view", rules=_VIEW_RULES, aggregation=_aggregating("view"),
                labels={f"{AGGREGATE_LABEL}edit": "true"}),
    ),
    (BindingDef("cluster-admin", CLUSTER_ROLE, "cluster-admin", (Subject("Group", MASTERS),)),
     BindingDef("system:flotilla:services-auth-delegator", CLUSTER_ROLE, AUTH_DELEGATOR,
                (Subject("Group", SERVICES_GROUP),))),
)
BOOTSTRAP_NAMES = frozenset(r.name for r in BOOTSTRAP[0]) | frozenset(b.name for b in BOOTSTRAP[1])
