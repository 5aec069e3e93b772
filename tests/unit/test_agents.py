"""What a Pull agent may do (flotilla.security.agents): its own cluster's objects and nothing of
any other member's. Tables of who is an agent, of requests it is allowed or has no opinion on,
and of the updates of a Cluster or a Work it may not write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.security import agents, rbac
from flotilla.security.rbac import Request, User
from tests.factories import make_cluster

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


# -- restriction -----------------------------------------------------------------------------


Object = cluster_pb2.Cluster | work_pb2.Work


def make_work(name: str = "web", namespace: str = ES_M1) -> work_pb2.Work:
    w = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    w.metadata.name, w.metadata.namespace = name, namespace
    w.spec.workload.manifests.append(b'{"apiVersion":"apps/v1","kind":"Deployment"}')
    return w


def _cluster_status(c: cluster_pb2.Cluster) -> None:
    c.status.kubernetes_version = "v1.31.0"
    c.status.conditions.add(type="Ready", status="True")


def _cluster_taint(c: cluster_pb2.Cluster) -> None:
    c.spec.taints.add(key="x", effect="NoSchedule")


def _cluster_endpoint(c: cluster_pb2.Cluster) -> None:
    c.spec.api_endpoint = "https://elsewhere.example:6443"


def _work_status(w: work_pb2.Work) -> None:
    w.status.conditions.add(type="Applied", status="True")


def _work_manifest_added(w: work_pb2.Work) -> None:
    w.spec.workload.manifests.append(b'{"apiVersion":"v1","kind":"Secret"}')


def _work_manifest_replaced(w: work_pb2.Work) -> None:
    w.spec.workload.manifests[0] = b'{"apiVersion":"v1","kind":"Pod"}'


def _annotations(obj: Object) -> None:
    obj.metadata.annotations["flotilla.io/seen"] = "yes"


def _finalizers(obj: Object) -> None:
    obj.metadata.finalizers.append("karmada.io/execution-controller")


def _resource_version(obj: Object) -> None:
    obj.metadata.resource_version = "42"


def _labels(obj: Object) -> None:
    obj.metadata.labels["region"] = "elsewhere"


def _nothing(obj: Object) -> None:
    pass


# (id, object builder, change, user, refused)
RESTRICTIONS: list[tuple[str, Callable[[], Object], Callable[[Any], None], User, bool]] = [
    ("cluster-unchanged", lambda: make_cluster("m1"), _nothing, AGENT, False),
    ("cluster-status", lambda: make_cluster("m1"), _cluster_status, AGENT, False),
    ("cluster-annotations", lambda: make_cluster("m1"), _annotations, AGENT, False),
    ("cluster-finalizers", lambda: make_cluster("m1"), _finalizers, AGENT, False),
    ("cluster-resource-version", lambda: make_cluster("m1"), _resource_version, AGENT, False),
    ("cluster-taint", lambda: make_cluster("m1"), _cluster_taint, AGENT, True),
    ("cluster-endpoint", lambda: make_cluster("m1"), _cluster_endpoint, AGENT, True),
    ("cluster-labels", lambda: make_cluster("m1"), _labels, AGENT, True),
    ("cluster-taint-by-non-agent", lambda: make_cluster("m1"), _cluster_taint, NOT_IN_GROUP, False),
    ("cluster-taint-by-admin", lambda: make_cluster("m1"), _cluster_taint, ADMIN, False),
    ("cluster-labels-by-admin", lambda: make_cluster("m1"), _labels, ADMIN, False),
    ("work-unchanged", make_work, _nothing, AGENT, False),
    ("work-status", make_work, _work_status, AGENT, False),
    ("work-annotations", make_work, _annotations, AGENT, False),
    ("work-finalizers", make_work, _finalizers, AGENT, False),
    ("work-resource-version", make_work, _resource_version, AGENT, False),
    ("work-manifest-added", make_work, _work_manifest_added, AGENT, True),
    ("work-manifest-replaced", make_work, _work_manifest_replaced, AGENT, True),
    ("work-labels", make_work, _labels, AGENT, True),
    ("work-manifest-by-non-agent", make_work, _work_manifest_added, NOT_IN_GROUP, False),
    ("work-manifest-by-admin", make_work, _work_manifest_replaced, ADMIN, False),
]


@pytest.mark.parametrize(("build", "change", "user", "refused"), [c[1:] for c in RESTRICTIONS],
                         ids=[c[0] for c in RESTRICTIONS])
def test_restriction(build: Callable[[], Object], change: Callable[[Object], None], user: User,
                     refused: bool) -> None:
    old, new = build(), build()
    assert old == new
    change(new)
    reason = agents.restriction(user, old, new)
    if refused:
        kind = type(old).__name__
        assert reason.startswith(f'User "{user.name}" may not change {kind} "{old.metadata.name}"'), reason
    else:
        assert reason == ""


def test_restriction_leaves_the_objects_alone() -> None:
    old, new = make_cluster("m1"), make_cluster("m1")
    _cluster_status(new)
    _annotations(new)
    before = new.SerializeToString(deterministic=True)
    assert agents.restriction(AGENT, old, new) == ""
    assert new.SerializeToString(deterministic=True) == before
    assert new.status.kubernetes_version == "v1.31.0"


def test_restriction_of_another_kind_is_not_its_business() -> None:
    old = cluster_pb2.ClusterStatus(kubernetes_version="v1")
    new = cluster_pb2.ClusterStatus(kubernetes_version="v2")
    assert agents.restriction(AGENT, old, new) == ""
