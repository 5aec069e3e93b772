"""What a Pull agent may do (flotilla.security.agents): its own cluster's objects and nothing of
any other member's. Tables of who is an agent, of requests it is allowed or has no opinion on,
and of the updates of a Cluster or a Work it may not write."""

from __future__ import annotations

import pytest

from flotilla.security import agents, rbac
from flotilla.security.rbac import Request, User

AGENT = User.of("agent-m1", [agents.GROUP])
NOT_IN_GROUP = User.of("agent-m1")
ADMIN = User.of("admin", [rbac.MASTERS])

CLUSTERS, WORKS, LEASES = "cluster.karmada.io", "work.karmada.io", "coordination.k8s.io"
CONFIG, SYSTEM = "config.karmada.io", "flotilla.io"
ES_M1, ES_M2, LEASE_NS = "karmada-es-m1", "karmada-es-m2", "karmada-cluster"

CLUSTER_OF: list[tuple[str, User, str]] = [
    ("agent-in-group", AGENT, "m1"),
    ("agent-name-without-group", NOT_IN_GROUP, ""),
    ("group-without-agent-name", User.of("m1", [agents.GROUP]), ""),
    ("group-with-other-prefix", User.of("admin-m1", [agents.GROUP]), ""),
    ("neither", ADMIN, ""),
]


@pytest.mark.parametrize(("user", "cluster"), [c[1:] for c in CLUSTER_OF], ids=[c[0] for c in CLUSTER_OF])
def test_cluster_of(user: User, cluster: str) -> None:
    assert agents.cluster_of(user) == cluster


def req(verb: str, group: str, resource: str, namespace: str = "", name: str = "", subresource: str = "") -> Request:
    return Request(verb, group, resource, namespace, name, subresource)


ALLOWED: list[tuple[str, Request]] = [
    *((f"{verb}-clusters", req(verb, CLUSTERS, "clusters")) for verb in agents.READ),
    ("get-other-cluster", req("get", CLUSTERS, "clusters", name="m2")),
    ("update-own-cluster", req("update", CLUSTERS, "clusters", name="m1")),
    ("update-own-cluster-status", req("update", CLUSTERS, "clusters", name="m1", subresource="status")),
    *((f"{verb}-own-works", req(verb, WORKS, "works", ES_M1)) for verb in agents.READ),
    ("get-own-work", req("get", WORKS, "works", ES_M1, "web")),
    ("update-own-work", req("update", WORKS, "works", ES_M1, "web")),
    ("update-own-work-status", req("update", WORKS, "works", ES_M1, "web", "status")),
    *((f"{verb}-own-lease", req(verb, LEASES, "leases", LEASE_NS, "m1")) for verb in ("get", "create", "update")),
    ("create-events-in-default", req("create", "", "events", "default")),
    ("create-events-in-execution-namespace", req("create", "", "events", ES_M2)),
    ("create-events-at-cluster-scope", req("create", "", "events")),
    ("get-interpreter-customizations", req("get", CONFIG, "resourceinterpretercustomizations", name="c")),
    ("list-interpreter-customizations", req("list", CONFIG, "resourceinterpretercustomizations")),
    *((f"{verb}-own-{resource}", req(verb, SYSTEM, resource, name="agent-m1"))
      for resource in ("endpoints", "elections") for verb in ("create", "get", "delete")),
    ("create-store-lease", req("create", SYSTEM, "leases")),
]


@pytest.mark.parametrize("request_", [c[1] for c in ALLOWED], ids=[c[0] for c in ALLOWED])
def test_allowed(request_: Request) -> None:
    decision = agents.authorize(AGENT, request_)
    assert decision is not None
    assert decision.allowed is True
    assert "m1" in decision.reason


NO_OPINION: list[tuple[str, User, Request]] = [
    ("update-other-cluster", AGENT, req("update", CLUSTERS, "clusters", name="m2")),
    ("update-other-cluster-status", AGENT, req("update", CLUSTERS, "clusters", name="m2", subresource="status")),
    ("update-any-cluster", AGENT, req("update", CLUSTERS, "clusters")),
    ("create-cluster", AGENT, req("create", CLUSTERS, "clusters", name="m1")),
    ("delete-own-cluster", AGENT, req("delete", CLUSTERS, "clusters", name="m1")),
    ("list-other-works", AGENT, req("list", WORKS, "works", ES_M2)),
    ("update-other-work-status", AGENT, req("update", WORKS, "works", ES_M2, "web", "status")),
    ("list-works-at-cluster-scope", AGENT, req("list", WORKS, "works")),
    ("create-own-work", AGENT, req("create", WORKS, "works", ES_M1, "web")),
    ("delete-own-work", AGENT, req("delete", WORKS, "works", ES_M1, "web")),
    ("get-cluster-secret", AGENT, req("get", "", "secrets", LEASE_NS, "m1")),
    ("get-other-lease", AGENT, req("get", LEASES, "leases", LEASE_NS, "m2")),
    ("update-other-lease", AGENT, req("update", LEASES, "leases", LEASE_NS, "m2")),
    ("own-lease-name-in-other-namespace", AGENT, req("update", LEASES, "leases", ES_M1, "m1")),
    ("delete-own-lease", AGENT, req("delete", LEASES, "leases", LEASE_NS, "m1")),
    ("delete-events", AGENT, req("delete", "", "events", "default", "ev")),
    ("update-interpreter-customizations", AGENT, req("update", CONFIG, "resourceinterpretercustomizations", name="c")),
    ("get-executor-election", AGENT, req("get", SYSTEM, "elections", name="executor")),
    ("create-executor-election", AGENT, req("create", SYSTEM, "elections", name="executor")),
    ("get-other-agent-endpoints", AGENT, req("get", SYSTEM, "endpoints", name="agent-m2")),
    ("list-all-endpoints", AGENT, req("list", SYSTEM, "endpoints")),
    ("not-in-group-get-clusters", NOT_IN_GROUP, req("get", CLUSTERS, "clusters")),
    ("not-in-group-update-own-cluster", NOT_IN_GROUP, req("update", CLUSTERS, "clusters", name="m1")),
    ("not-in-group-list-works", NOT_IN_GROUP, req("list", WORKS, "works", ES_M1)),
    ("not-in-group-create-store-lease", NOT_IN_GROUP, req("create", SYSTEM, "leases")),
    ("admin-anything", ADMIN, req("delete", CLUSTERS, "clusters", name="m1")),
]


@pytest.mark.parametrize(("user", "request_"), [c[1:] for c in NO_OPINION], ids=[c[0] for c in NO_OPINION])
def test_no_opinion(user: User, request_: Request) -> None:
    assert agents.authorize(user, request_) is None
