"""RBAC evaluated as Kubernetes evaluates it (plugin/pkg/auth/authorizer/rbac): a table of
requests against one policy, and the reading of the objects."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.security import rbac
from flotilla.security.rbac import Policy, PolicyError, Request, Rule, User, binding_of, role_of


def cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None,
                 aggregate: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": rbac.API_VERSION, "kind": "ClusterRole",
                           "metadata": {"name": name, "labels": labels or {}}, "rules": rules}
    if aggregate is not None:
        doc["aggregationRule"] = {"clusterRoleSelectors": aggregate}
    return doc


def role(namespace: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": rbac.API_VERSION, "kind": "Role", "metadata": {"name": name, "namespace": namespace},
            "rules": rules}


def binding(name: str, role_kind: str, role_name: str, subjects: list[dict[str, str]],
            namespace: str = "") -> dict[str, Any]:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": rbac.API_VERSION, "kind": kind, "metadata": meta, "subjects": subjects,
            "roleRef": {"apiGroup": rbac.GROUP, "kind": role_kind, "name": role_name}}


ROLES = [
    cluster_role("pp-reader", [{"apiGroups": ["policy.karmada.io"], "resources": ["propagationpolicies"],
                                "verbs": ["get", "list"]}]),
    cluster_role("binding-status", [{"apiGroups": ["work.karmada.io"], "resources": ["resourcebindings/status"],
                                     "verbs": ["update"]}]),
    cluster_role("any-status", [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
    cluster_role("one-cluster", [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"],
                                  "resourceNames": ["member1"], "verbs": ["*"]}]),
    cluster_role("secret-reader", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
                 labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
    cluster_role("aggregate", [], aggregate=[{"matchLabels": {"team": "a"}}]),
    cluster_role("team-a-part", [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}],
                 labels={"team": "a"}),
    cluster_role("outer", [], aggregate=[{"matchExpressions": [{"key": "layer", "operator": "In",
                                                                "values": ["inner"]}]}]),
    cluster_role("inner", [], labels={"layer": "inner"}, aggregate=[{"matchLabels": {"team": "a"}}]),
    role("dev", "deployer", [{"apiGroups": ["apps"], "resources": ["deployments"],
                              "verbs": ["create", "update", "delete"]}]),
]
BINDINGS = [
    binding("readers", "ClusterRole", "pp-reader", [{"kind": "Group", "name": "readers"}]),
    binding("status-writer", "ClusterRole", "binding-status", [{"kind": "User", "name": "scheduler"}]),
    binding("status-getter", "ClusterRole", "any-status", [{"kind": "User", "name": "watcher"}]),
    binding("member1-owner", "ClusterRole", "one-cluster", [{"kind": "User", "name": "agent-member1"}]),
    binding("team-a", "ClusterRole", "aggregate", [{"kind": "User", "name": "alice"}]),
    binding("outer", "ClusterRole", "outer", [{"kind": "User", "name": "olga"}]),
    binding("deployers", "Role", "deployer", [{"kind": "User", "name": "dave"}], namespace="dev"),
    binding("dev-view", "ClusterRole", "view", [{"kind": "User", "name": "vera"}], namespace="dev"),
    binding("dev-edit", "ClusterRole", "edit", [{"kind": "User", "name": "eddie"}], namespace="dev"),
    binding("dev-admin", "ClusterRole", "admin", [{"kind": "User", "name": "ann"}], namespace="dev"),
    binding("ci", "ClusterRole", "edit", [{"kind": "ServiceAccount", "name": "ci"}], namespace="dev"),
    # Stored under a bootstrap name: ignored, the built-in one stays.
    binding("cluster-admin", "ClusterRole", "cluster-admin", [{"kind": "User", "name": "mallory"}]),
]
STORED_CLUSTER_ADMIN = cluster_role("cluster-admin", [])


def policy() -> Policy:
    return Policy([role_of(d) for d in [*ROLES, STORED_CLUSTER_ADMIN]], [binding_of(d) for d in BINDINGS])


PP = ("policy.karmada.io", "propagationpolicies")
RB = ("work.karmada.io", "resourcebindings")


def req(verb: str, group_resource: tuple[str, str], namespace: str = "", name: str = "",
        subresource: str = "") -> Request:
    return Request(verb, group_resource[0], group_resource[1], namespace, name, subresource)


CASES: list[tuple[str, User, Request, bool]] = [
    # The bootstrap policy.
    ("masters may do anything", User.of("admin", ["system:masters"]), req("delete", ("x.io", "things"), "a"), True),
    ("a certificate without a group may do nothing", User.of("status"), req("create", PP, "default"), False),
    ("a stored binding under a bootstrap name is ignored", User.of("mallory"), req("get", PP, "default"), False),
    # Verbs, groups, resources.
    ("group subject, listed verb", User.of("u", ["readers"]), req("list", PP, "default"), True),
    ("group subject, other verb", User.of("u", ["readers"]), req("create", PP, "default"), False),
    ("same resource name in another group", User.of("u", ["readers"]),
     req("get", ("other.io", "propagationpolicies"), "default"), False),
    ("cluster role binding applies in every namespace", User.of("u", ["readers"]), req("get", PP, "x"), True),
    # Subresources.
    ("subresource rule allows it", User.of("scheduler"), req("update", RB, "a", "b", "status"), True),
    ("subresource rule does not allow the resource", User.of("scheduler"), req("update", RB, "a", "b"), False),
    ("*/status allows any status", User.of("watcher"), req("get", RB, "a", "b", "status"), True),
    ("*/status does not allow the object", User.of("watcher"), req("get", RB, "a", "b"), False),
    # resourceNames.
    ("named object allowed", User.of("agent-member1"), req("update", ("cluster.karmada.io", "clusters"), "", "member1"),
     True),
    ("another name denied", User.of("agent-member1"), req("update", ("cluster.karmada.io", "clusters"), "", "member2"),
     False),
    ("a named rule never allows list", User.of("agent-member1"), req("list", ("cluster.karmada.io", "clusters")),
     False),
    # RoleBindings hold in their namespace only.
    ("role binding in its namespace", User.of("dave"), req("create", ("apps", "deployments"), "dev"), True),
    ("role binding elsewhere", User.of("dave"), req("create", ("apps", "deployments"), "prod"), False),
    ("role binding at the cluster scope", User.of("dave"), req("create", ("apps", "deployments")), False),
    # view, edit, admin.
    ("view reads", User.of("vera"), req("get", PP, "dev"), True),
    ("view does not write", User.of("vera"), req("create", PP, "dev"), False),
    ("view aggregates labelled roles", User.of("vera"), req("get", ("", "secrets"), "dev"), True),
    ("edit writes policies", User.of("eddie"), req("create", PP, "dev"), True),
    ("edit writes secrets", User.of("eddie"), req("create", ("", "secrets"), "dev"), True),
    ("edit does not grant roles", User.of("eddie"), req("create", (rbac.GROUP, "rolebindings"), "dev"), False),
    ("edit does not write clusters", User.of("eddie"), req("create", ("cluster.karmada.io", "clusters")), False),
    ("admin grants roles in the namespace", User.of("ann"), req("create", (rbac.GROUP, "rolebindings"), "dev"), True),
    ("admin gets edit's aggregated view rules", User.of("ann"), req("get", ("", "secrets"), "dev"), True),
    ("service account subject", User.of("system:serviceaccount:dev:ci"), req("update", PP, "dev"), True),
    ("service account of another namespace", User.of("system:serviceaccount:prod:ci"), req("update", PP, "dev"),
     False),
    # Aggregation.
    ("aggregated by matchLabels", User.of("alice"), req("get", ("apps", "deployments"), "x"), True),
    ("aggregated through a role that aggregates", User.of("olga"), req("get", ("apps", "deployments"), "x"), True),
]


@pytest.mark.parametrize(("user", "request_", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_authorize(user: User, request_: Request, allowed: bool) -> None:
    assert policy().authorize(user, request_).allowed is allowed


def test_a_denial_is_worded_as_kubernetes_words_it() -> None:
    decision = policy().authorize(User.of("status"), req("create", PP, "default"))
    assert decision.reason == ('User "status" cannot create resource "propagationpolicies" in API group '
                               '"policy.karmada.io" in the namespace "default"')
    at_cluster = policy().authorize(User.of("x"), req("update", ("cluster.karmada.io", "clusters"), "", "m",
                                                      "status"))
    assert at_cluster.reason == ('User "x" cannot update resource "clusters/status" in API group '
                                 '"cluster.karmada.io" at the cluster scope')
    core = policy().authorize(User.of("x"), req("get", ("", "secrets"), "kube-system"))
    assert 'in API group ""' in core.reason


def test_an_allowance_names_the_binding_that_grants_it() -> None:
    decision = policy().authorize(User.of("dave"), req("create", ("apps", "deployments"), "dev"))
    assert decision.reason == 'RoleBinding "deployers" of namespace \'dev\' of Role "deployer"'


COVERS: list[tuple[str, list[Rule], list[Rule], int]] = [
    ("the same rule", [Rule.of(["get"], [""], ["pods"])], [Rule.of(["get"], [""], ["pods"])], 0),
    ("a wider rule", [Rule.of(["*"], ["*"], ["*"])], [Rule.of(["get", "list"], ["apps"], ["deployments"])], 0),
    ("a verb more", [Rule.of(["get"], [""], ["pods"])], [Rule.of(["get", "delete"], [""], ["pods"])], 1),
    ("a * asked for is covered only by a *", [Rule.of(["get", "list", "watch"], [""], ["pods"])],
     [Rule.of(["*"], [""], ["pods"])], 1),
    ("names within an unnamed rule", [Rule.of(["get"], [""], ["pods"])], [Rule.of(["get"], [""], ["pods"], ["a"])],
     0),
    ("no names where the owner has names", [Rule.of(["get"], [""], ["pods"], ["a"])],
     [Rule.of(["get"], [""], ["pods"])], 1),
    ("a subresource under */sub", [Rule.of(["get"], ["*"], ["*/status"])],
     [Rule.of(["get"], ["apps"], ["deployments/status"])], 0),
]


@pytest.mark.parametrize(("owner", "requested", "missing"), [c[1:] for c in COVERS], ids=[c[0] for c in COVERS])
def test_covers(owner: list[Rule], requested: list[Rule], missing: int) -> None:
    assert len(rbac.covers(owner, requested)) == missing


BAD: list[tuple[dict[str, Any], str]] = [
    (cluster_role("r", [{"apiGroups": [""], "resources": ["pods"]}]), "rules[0].verbs"),
    (cluster_role("r", [{"apiGroups": [""], "resources": ["pods"], "verbs": "get"}]), "rules[0].verbs"),
    (cluster_role("r", [{"resources": ["pods"], "verbs": ["get"]}]), "rules[0].apiGroups"),
    (cluster_role("r", [{"apiGroups": [""], "verbs": ["get"]}]), "rules[0].resources"),
    (cluster_role("r", [], aggregate=[{"matchExpressions": [{"key": "a", "operator": "Near"}]}]),
     "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator"),
    (binding("b", "Role", "r", [{"kind": "User", "name": "u"}]), "roleRef.kind"),
    (binding("b", "ClusterRole", "", [{"kind": "User", "name": "u"}]), "roleRef.name"),
    (binding("b", "ClusterRole", "r", [{"kind": "Robot", "name": "u"}]), "subjects[0].kind"),
    (binding("b", "ClusterRole", "r", [{"kind": "ServiceAccount", "name": "ci"}]), "subjects[0].namespace"),
]


@pytest.mark.parametrize(("doc", "path"), BAD, ids=[p for _, p in BAD])
def test_a_bad_object_names_its_field(doc: dict[str, Any], path: str) -> None:
    read = binding_of if doc["kind"].endswith("Binding") else role_of
    with pytest.raises(PolicyError) as raised:
        read(doc)
    assert raised.value.path == path


def test_a_service_account_subject_of_a_role_binding_defaults_to_its_namespace() -> None:
    read = binding_of(binding("b", "ClusterRole", "edit", [{"kind": "ServiceAccount", "name": "ci"}], "dev"))
    assert read.subjects[0].namespace == "dev"
