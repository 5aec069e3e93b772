"""The built-in roles and override policies: a namespace's view role reads its OverridePolicies,
edit and admin write them, as Karmada's aggregated roles (admin-clusterrole-aggregation.yaml) do;
ClusterOverridePolicy, cluster-scoped like ClusterPropagationPolicy, is cluster-admin's."""

from __future__ import annotations

import pytest

from flotilla.security.rbac import Policy, Request, User, binding_of

OP = ("policy.karmada.io", "overridepolicies")
COP = ("policy.karmada.io", "clusteroverridepolicies")


def policy() -> Policy:
    bindings = [binding_of({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                            "metadata": {"name": role, "namespace": "dev"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                            "subjects": [{"kind": "User", "name": role}]}) for role in ("view", "edit", "admin")]
    return Policy([], bindings)


@pytest.mark.parametrize(("user", "verb", "resource", "allowed"), [
    ("view", "get", OP, True), ("view", "list", OP, True), ("view", "watch", OP, True),
    ("view", "create", OP, False), ("edit", "create", OP, True), ("edit", "delete", OP, True),
    ("admin", "update", OP, True), ("admin", "patch", OP, True),
    ("admin", "create", COP, False), ("view", "get", COP, False),
])
def test_override_policies_by_role(user: str, verb: str, resource: tuple[str, str], allowed: bool) -> None:
    request = Request(verb, resource[0], resource[1], "dev" if resource == OP else "", "p", "")
    assert policy().authorize(User.of(user), request).allowed is allowed


def test_cluster_admin_writes_cluster_override_policies() -> None:
    request = Request("create", COP[0], COP[1], "", "p", "")
    assert policy().authorize(User.of("root", ["system:masters"]), request).allowed
