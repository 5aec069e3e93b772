"""What a key of the store holds, in RBAC's terms (flotilla.security.storage_access): a table of
keys and the targets they are authorized on, of the keys the storage API does not serve, and of
the writes it takes (status and bookkeeping, never an object's content)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.security import rbac
from flotilla.security.storage_access import EVERYTHING, SYSTEM_GROUP, NotServed, Target, target_of, write_refusal
from tests.factories import make_cluster

WORKS, CLUSTERS = "work.karmada.io", "cluster.karmada.io"
RBAC = "rbac.authorization.k8s.io"

SERVED: list[tuple[str, str, Target]] = [
    ("everything", "/flotilla/", Target(rbac.ALL, rbac.ALL, collection=True)),
    # Built-ins: `<plural>`, their group and registered type from the registry.
    ("builtin-namespaced-object", "/flotilla/works/karmada-es-m1/web",
     Target(WORKS, "works", "karmada-es-m1", "web", builtin=registry.WORK)),
    ("builtin-namespaced-collection", "/flotilla/works/",
     Target(WORKS, "works", collection=True, builtin=registry.WORK)),
    ("builtin-namespaced-collection-of-a-namespace", "/flotilla/works/karmada-es-m1/",
     Target(WORKS, "works", "karmada-es-m1", collection=True, builtin=registry.WORK)),
    ("builtin-cluster-scoped-object", "/flotilla/clusters/m1",
     Target(CLUSTERS, "clusters", name="m1", builtin=registry.CLUSTER)),
    ("builtin-cluster-scoped-collection", "/flotilla/clusters/",
     Target(CLUSTERS, "clusters", collection=True, builtin=registry.CLUSTER)),
    ("builtin-core-group", "/flotilla/events/default/ev-1",
     Target("", "events", "default", "ev-1", builtin=registry.EVENT)),
    # Templates: `<plural>.<group>`, `<plural>` in the core group; no registered type.
    ("template-object", "/flotilla/deployments.apps/default/web", Target("apps", "deployments", "default", "web")),
    ("template-collection", "/flotilla/deployments.apps/", Target("apps", "deployments", collection=True)),
    ("template-collection-of-a-namespace", "/flotilla/deployments.apps/default/",
     Target("apps", "deployments", "default", collection=True)),
    ("template-core-group", "/flotilla/secrets/karmada-cluster/m1", Target("", "secrets", "karmada-cluster", "m1")),
    ("template-dotted-group", "/flotilla/clusterroles.rbac.authorization.k8s.io/view",
     Target(RBAC, "clusterroles", name="view")),
    # Flotilla's registries, named for the service.
    ("endpoints-collection", "/flotilla/endpoints/", Target(SYSTEM_GROUP, "endpoints", collection=True)),
    ("endpoints-of-a-service", "/flotilla/endpoints/agent-m1/",
     Target(SYSTEM_GROUP, "endpoints", name="agent-m1", collection=True)),
    ("endpoint-of-an-instance", "/flotilla/endpoints/agent-m1/pod-1",
     Target(SYSTEM_GROUP, "endpoints", name="agent-m1")),
    ("elections-collection", "/flotilla/election/", Target(SYSTEM_GROUP, "elections", collection=True)),
    ("election-of-a-service", "/flotilla/election/executor", Target(SYSTEM_GROUP, "elections", name="executor")),
    ("shards-of-a-service", "/flotilla/shards/executor/", Target(SYSTEM_GROUP, "shards", name="executor",
                                                                  collection=True)),
    ("shard-claims-of-a-service", "/flotilla/shards/executor/claims/",
     Target(SYSTEM_GROUP, "shards", name="executor", collection=True)),
    ("shard-claim", "/flotilla/shards/executor/claims/member1", Target(SYSTEM_GROUP, "shards", name="executor")),
]


@pytest.mark.parametrize(("key", "target"), [c[1:] for c in SERVED], ids=[c[0] for c in SERVED])
def test_target_of(key: str, target: Target) -> None:
    assert target_of(key) == target


def test_everything_is_the_module_constant() -> None:
    assert target_of("/flotilla/") == EVERYTHING


REFUSED: list[tuple[str, str, str]] = [
    ("outside-the-plane", "/registry/works/karmada-es-m1/web", "not a key of the plane"),
    ("root-without-slash", "/flotilla", "not a key of the plane"),
    ("lease-owners", "/flotilla/leaseowners/1", "lease holders"),
    ("lease-owners-collection", "/flotilla/leaseowners/", "lease holders"),
    ("empty-segment", "/flotilla/works//x", "empty path segment"),
    ("empty-resource", "/flotilla//", "empty path segment"),
    ("cluster-scoped-builtin-with-namespace", "/flotilla/clusters/a/b", "expected"),
    ("cluster-scoped-builtin-collection-with-namespace", "/flotilla/clusters/a/", "expected"),
    ("namespaced-builtin-without-namespace", "/flotilla/works/web", "expected"),
    ("builtin-without-name", "/flotilla/works", "expected"),
    ("template-without-name", "/flotilla/deployments.apps", "expected"),
    ("builtin-too-many-segments", "/flotilla/works/karmada-es-m1/web/x", "expected"),
    ("template-too-many-segments", "/flotilla/deployments.apps/default/web/x", "expected"),
    ("collection-too-many-segments", "/flotilla/deployments.apps/default/web/", "expected"),
    ("endpoints-too-many-segments", "/flotilla/endpoints/agent-m1/pod-1/x", "expected"),
    ("election-too-many-segments", "/flotilla/election/executor/x", "expected"),
    ("shards-too-many-segments", "/flotilla/shards/executor/claims/member1/x", "expected"),
    ("shards-not-members-or-claims", "/flotilla/shards/executor/other/x", "expected"),
    # The scope of a kind the registry knows, template or not.
    ("cluster-scoped-template-with-namespace", "/flotilla/clusterroles.rbac.authorization.k8s.io/a/b", "expected"),
    ("namespaced-template-without-namespace", "/flotilla/rolebindings.rbac.authorization.k8s.io/b", "expected"),
    ("no-plural", "/flotilla/.apps/ns/x", "not where objects"),
    ("a-builtin-as-a-template", "/flotilla/works.work.karmada.io/ns/x", "not where objects"),
]


# The scope of a template's kind is not consulted: a key of a cluster-scoped kind with a namespace,
# or of a namespaced kind without one, is served, unlike a built-in's. A ClusterRole (or

@pytest.mark.parametrize(("key", "why"), [pytest.param(*c[1:], id=c[0]) for c in REFUSED])
def test_not_served(key: str, why: str) -> None:
    with pytest.raises(NotServed, match=why):
        target_of(key)


def test_not_served_is_a_value_error() -> None:
    assert issubclass(NotServed, ValueError)


REQUESTS: list[tuple[str, Target, str, str, rbac.Request]] = [
    ("object-get", target_of("/flotilla/works/karmada-es-m1/web"), "get", "",
     rbac.Request("get", WORKS, "works", "karmada-es-m1", "web", "")),
    ("object-status-update", target_of("/flotilla/clusters/m1"), "update", "status",
     rbac.Request("update", CLUSTERS, "clusters", "", "m1", "status")),
    ("collection-list", target_of("/flotilla/deployments.apps/default/"), "list", "",
     rbac.Request("list", "apps", "deployments", "default", "", "")),
    ("registry-create", target_of("/flotilla/election/executor"), "create", "",
     rbac.Request("create", SYSTEM_GROUP, "elections", "", "executor", "")),
    ("everything-watch", EVERYTHING, "watch", "", rbac.Request("watch", rbac.ALL, rbac.ALL)),
]


@pytest.mark.parametrize(("target", "verb", "subresource", "request_"), [c[1:] for c in REQUESTS],
                         ids=[c[0] for c in REQUESTS])
def test_request(target: Target, verb: str, subresource: str, request_: rbac.Request) -> None:
    assert target.request(verb, subresource) == request_


def test_request_defaults_to_no_subresource() -> None:
    request_ = target_of("/flotilla/works/karmada-es-m1/web").request("delete")
    assert request_ == rbac.Request("delete", WORKS, "works", "karmada-es-m1", "web")
    assert request_.combined_resource == "works"


IS_OBJECT: list[tuple[str, bool]] = [
    ("/flotilla/works/karmada-es-m1/web", True),
    ("/flotilla/deployments.apps/default/web", True),
    ("/flotilla/", False),
    ("/flotilla/endpoints/agent-m1/pod-1", False),
    ("/flotilla/election/executor", False),
]


@pytest.mark.parametrize(("key", "is_object"), IS_OBJECT, ids=[k for k, _ in IS_OBJECT])
def test_is_object(key: str, is_object: bool) -> None:
    assert target_of(key).is_object is is_object


# -- what may be written through the API ----------------------------------------------------


def make_work() -> work_pb2.Work:
    w = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    w.metadata.name, w.metadata.namespace = "web", "karmada-es-m1"
    w.spec.workload.manifests.append(b'{"apiVersion":"apps/v1","kind":"Deployment"}')
    return w


def make_role() -> Unstructured:
    role = Unstructured(api_version=f"{RBAC}/v1", kind="ClusterRole",
                        content=b'{"rules": [], "metadata": {"name": "r"}}')
    role.metadata.name = "r"
    return role


def _status(obj: Any) -> None:
    if isinstance(obj, Unstructured):
        obj.content = b'{"rules": [], "metadata": {"name": "r"}, "status": {"x": 1}}'
    else:
        obj.status.conditions.add(type="Ready", status="True")


def _annotations(obj: Any) -> None:
    obj.metadata.annotations["flotilla.io/seen"] = "yes"


def _finalizers(obj: Any) -> None:
    obj.metadata.finalizers.append("karmada.io/execution-controller")


def _labels(obj: Any) -> None:
    obj.metadata.labels["region"] = "elsewhere"


def _taint(obj: Any) -> None:
    obj.spec.taints.add(key="x", effect="NoSchedule")


def _manifest(obj: Any) -> None:
    obj.spec.workload.manifests[0] = b'{"apiVersion":"v1","kind":"Secret"}'


def _rules(obj: Any) -> None:
    obj.content = b'{"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], "metadata": {"name": "r"}}'


WORK_KEY, CLUSTER_KEY = "/flotilla/works/karmada-es-m1/web", "/flotilla/clusters/m1"
ROLE_KEY = f"/flotilla/clusterroles.{RBAC}/r"
# (id, key, object builder, change, allowed)
UPDATES: list[tuple[str, str, Callable[[], Any], Callable[[Any], None], bool]] = [
    ("cluster-status", CLUSTER_KEY, lambda: make_cluster("m1"), _status, True),
    ("cluster-annotations", CLUSTER_KEY, lambda: make_cluster("m1"), _annotations, True),
    ("cluster-finalizers", CLUSTER_KEY, lambda: make_cluster("m1"), _finalizers, True),
    ("cluster-taint", CLUSTER_KEY, lambda: make_cluster("m1"), _taint, False),
    ("cluster-labels", CLUSTER_KEY, lambda: make_cluster("m1"), _labels, False),
    ("work-status", WORK_KEY, make_work, _status, True),
    ("work-finalizers", WORK_KEY, make_work, _finalizers, True),
    ("work-manifest", WORK_KEY, make_work, _manifest, False),
    ("template-status", ROLE_KEY, make_role, _status, True),
    ("template-annotations", ROLE_KEY, make_role, _annotations, True),
    ("template-content", ROLE_KEY, make_role, _rules, False),
]


@pytest.mark.parametrize(("key", "build", "change", "allowed"), [c[1:] for c in UPDATES], ids=[c[0] for c in UPDATES])
def test_updates_written_through_the_api(key: str, build: Callable[[], Any], change: Callable[[Any], None],
                                         allowed: bool) -> None:
    old, new = build(), build()
    change(new)
    before = new.SerializeToString(deterministic=True)
    refusal = write_refusal(target_of(key), "update", old, new)
    assert (refusal == "") is allowed, refusal
    if not allowed:
        assert "through admission" in refusal
    assert new.SerializeToString(deterministic=True) == before, "the objects are left as they are"


@pytest.mark.parametrize(("key", "verb", "allowed"), [
    ("/flotilla/events/default/e", "create", True),
    ("/flotilla/leases/karmada-cluster/m1", "create", True),
    ("/flotilla/leases/karmada-cluster/m1", "delete", True),
    ("/flotilla/endpoints/agent-m1/pod", "create", True),
    ("/flotilla/election/agent-m1", "delete", True),
    (WORK_KEY, "create", False),
    (WORK_KEY, "delete", False),
    (ROLE_KEY, "create", False),
    ("/flotilla/propagationpolicies/default/p", "create", False),
])
def test_creates_and_deletes(key: str, verb: str, allowed: bool) -> None:
    assert (write_refusal(target_of(key), verb, None, None) == "") is allowed
