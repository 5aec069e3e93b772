"""The simulator's Kubernetes API: auth, discovery, CRUD, server-side apply, subresources, CRDs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}}, "data": data}


def deployment(name: str = "web", replicas: int = 1, image: str = "nginx") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


@pytest.fixture
async def api(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> KubeHttp:
    server = await start_sim()
    return kube_http(server.cluster("member1"))


async def test_every_path_needs_the_clusters_token(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim("member1", "member2")
    one, two = server.cluster("member1"), server.cluster("member2")
    unauthorized = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    for token in ("", "wrong", two.token):
        for path in ("/readyz", "/healthz", "/version", "/api", "/apis", "/api/v1/nodes", CM):
            assert await kube_http(one, token).get(path) == (401, unauthorized)
    assert (await kube_http(one).get("/readyz")) == (200, "ok")
    assert (await kube_http(two).get("/healthz")) == (200, "ok")


async def test_version_and_discovery(api: KubeHttp) -> None:
    version = await api.ok("GET", "/version")
    assert (version["major"], version["minor"], version["gitVersion"]) == ("1", "31", "v1.31.0")
    assert (await api.ok("GET", "/api"))["versions"] == ["v1"]
    groups = {g["name"]: g for g in (await api.ok("GET", "/apis"))["groups"]}
    assert set(groups) == {"apps", "batch", "policy", "networking.k8s.io", "coordination.k8s.io",
                           "apiextensions.k8s.io"}
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert (await api.ok("GET", "/apis/apps"))["kind"] == "APIGroup"
    apps = {r["name"]: r for r in (await api.ok("GET", "/apis/apps/v1"))["resources"]}
    assert apps["deployments"] == {
        "name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update"],
        "shortNames": ["deploy"], "categories": ["all"]}
    assert apps["deployments/scale"]["kind"] == "Scale"
    assert apps["deployments/status"]["kind"] == "Deployment"
    core = {r["name"]: r for r in (await api.ok("GET", "/api/v1"))["resources"]}
    assert {"namespaces", "nodes", "pods", "configmaps", "secrets", "services", "serviceaccounts",
            "persistentvolumeclaims", "events"} <= set(core)
    assert core["nodes"]["namespaced"] is False
    assert (await api.get("/apis/nope/v1"))[0] == 404
    assert (await api.get("/apis/apps/v2"))[0] == 404


async def test_create_get_list_replace_delete(api: KubeHttp) -> None:
    created = await api.ok("POST", CM, configmap("one", {"tier": "a"}, k="v"))
    metadata = created["metadata"]
    assert metadata["namespace"] == "default" and metadata["uid"] and metadata["creationTimestamp"]
    assert "generation" not in metadata  # ConfigMaps have no generation
    assert (await api.request("POST", CM, configmap("one")))[1]["reason"] == "AlreadyExists"
    await api.ok("POST", CM, configmap("two", {"tier": "b"}))
    assert (await api.ok("GET", f"{CM}/one"))["data"] == {"k": "v"}

    listed = await api.ok("GET", CM, labelSelector="tier=a")
    assert listed["kind"] == "ConfigMapList" and int(listed["metadata"]["resourceVersion"]) >= 2
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]
    assert "kind" not in listed["items"][0]  # built-in lists carry the kind on the list only
    assert len((await api.ok("GET", CM, labelSelector="tier!=a,tier"))["items"]) == 1
    assert len((await api.ok("GET", CM, labelSelector="tier in (a,b)"))["items"]) == 2
    assert len((await api.ok("GET", "/api/v1/configmaps"))["items"]) == 2  # across namespaces
    assert len((await api.ok("GET", CM, fieldSelector="metadata.name=two"))["items"]) == 1

    stale = dict(created, data={"k": "stale"})
    current = await api.ok("PUT", f"{CM}/one", dict(created, data={"k": "new"}))
    assert int(current["metadata"]["resourceVersion"]) > int(metadata["resourceVersion"])
    assert current["metadata"]["uid"] == metadata["uid"]
    status, conflict = await api.request("PUT", f"{CM}/one", stale)
    assert (status, conflict["reason"]) == (409, "Conflict")

    deleted = await api.ok("DELETE", f"{CM}/one")
    assert (deleted["status"], deleted["details"]["name"]) == ("Success", "one")
    status, missing = await api.get(f"{CM}/one")
    assert (status, missing["reason"], missing["message"]) == (404, "NotFound", 'configmaps "one" not found')
    assert (await api.request("DELETE", f"{CM}/one"))[0] == 404


async def test_namespaces_are_created_on_demand(api: KubeHttp) -> None:
    await api.ok("POST", "/api/v1/namespaces/team-a/configmaps", configmap("x"))
    namespace = await api.ok("GET", "/api/v1/namespaces/team-a")
    assert namespace["status"]["phase"] == "Active"
    await api.ok("DELETE", "/api/v1/namespaces/team-a")
    assert (await api.get("/api/v1/namespaces/team-a/configmaps/x"))[0] == 404


async def test_bad_requests(api: KubeHttp) -> None:
    status, body = await api.request("POST", "/api/v1/namespaces/other/configmaps",
                                     dict(configmap("x"), metadata={"name": "x", "namespace": "default"}))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert (await api.request("POST", CM, deployment()))[0] == 400  # kind does not match the path
    assert (await api.request("POST", CM, "{not json"))[0] == 400
    assert (await api.request("PUT", f"{CM}/a", configmap("b")))[0] in (400, 404)
    assert (await api.get("/apis/apps/v1/namespaces/default/widgets"))[0] == 404
    assert (await api.get("/nonsense"))[0] == 404
    assert (await api.request("PATCH", f"{CM}/a", [], content_type="application/json-patch+json"))[0] == 400


async def test_server_side_apply_creates_then_replaces_owned_fields(api: KubeHttp) -> None:
    body = deployment(replicas=2)
    body["metadata"]["labels"] = {"team": "a"}
    status, created = await api.request("PATCH", f"{DEPLOYMENTS}/web", body, APPLY, fieldManager="flotilla",
                                        force="true")
    assert status == 201 and created["metadata"]["generation"] == 1
    live = await api.ok("GET", f"{DEPLOYMENTS}/web")
    assert live["status"]["observedGeneration"] == 1  # the controller's status
    status, same = await api.request("PATCH", f"{DEPLOYMENTS}/web", body, APPLY, fieldManager="flotilla",
                                     force="true")
    assert status == 200 and same["metadata"]["generation"] == 1
    assert same["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]  # a no-op apply

    body["spec"]["replicas"] = 3
    del body["metadata"]["labels"]
    updated = await api.ok("PATCH", f"{DEPLOYMENTS}/web", body, content_type=APPLY, fieldManager="flotilla",
                           force="true")
    assert updated["metadata"]["generation"] == 2
    assert updated["spec"]["replicas"] == 3 and "labels" not in updated["metadata"]
    assert updated["status"]["observedGeneration"] == 1  # status is kept, not applied
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]

    status, missing_manager = await api.request("PATCH", f"{DEPLOYMENTS}/web", body, APPLY)
    assert status == 400 and "fieldManager" in missing_manager["message"]
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: b\n"
    assert (await api.ok("PATCH", f"{CM}/y", yaml_body, content_type=APPLY, fieldManager="m"))["data"] == {"a": "b"}


async def test_merge_patch_status_and_scale_subresources(api: KubeHttp) -> None:
    await api.ok("POST", DEPLOYMENTS, deployment(replicas=1))
    patched = await api.ok("PATCH", f"{DEPLOYMENTS}/web", {"metadata": {"labels": {"x": "1"}}},
                           content_type="application/merge-patch+json")
    assert patched["metadata"]["labels"] == {"x": "1"} and patched["metadata"]["generation"] == 1
    scale = await api.ok("GET", f"{DEPLOYMENTS}/web/scale")
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["selector"]) == ("Scale", 1, "app=web")
    scaled = await api.ok("PUT", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 4}})
    assert scaled["spec"]["replicas"] == 4
    live = await api.ok("GET", f"{DEPLOYMENTS}/web")
    assert live["spec"]["replicas"] == 4 and live["metadata"]["generation"] == 2
    assert (await api.request("PUT", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": -1}}))[0] == 422

    status_write = await api.ok("PUT", f"{DEPLOYMENTS}/web/status", dict(live, status={"replicas": 99},
                                                                         spec={"replicas": 1}))
    assert status_write["spec"]["replicas"] == 4  # only status is written through /status
    assert (await api.get(f"{DEPLOYMENTS}/web/bogus"))[0] == 404


async def test_finalizers_delay_deletion_until_removed(api: KubeHttp) -> None:
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.ok("POST", CM, body)
    marked = await api.ok("DELETE", f"{CM}/held")
    assert marked["metadata"]["deletionTimestamp"]
    assert (await api.ok("GET", f"{CM}/held"))["metadata"]["deletionTimestamp"]
    await api.ok("PATCH", f"{CM}/held", {"metadata": {"finalizers": None}},
                 content_type="application/merge-patch+json")
    assert (await api.get(f"{CM}/held"))[0] == 404


async def test_a_crd_makes_its_kind_discoverable_and_servable(api: KubeHttp, start_sim: StartSim) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "flinkdeployments.flink.apache.org"},
           "spec": {"group": "flink.apache.org", "scope": "Namespaced",
                    "names": {"kind": "FlinkDeployment", "plural": "flinkdeployments", "singular": "flinkdeployment"},
                    "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                  "subresources": {"status": {}}}]}}
    path = "/apis/flink.apache.org/v1beta1/namespaces/default/flinkdeployments"
    assert (await api.get(path))[0] == 404
    created = await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert created["metadata"]["name"] == "flinkdeployments.flink.apache.org"
    established = await api.ok("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                      "flinkdeployments.flink.apache.org")
    assert {"type": "Established", "status": "True"}.items() <= established["status"]["conditions"][-1].items()
    resources = (await api.ok("GET", "/apis/flink.apache.org/v1beta1"))["resources"]
    assert [r["name"] for r in resources] == ["flinkdeployments", "flinkdeployments/status"]

    flink = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
             "metadata": {"name": "job"}, "spec": {"parallelism": 2}, "status": {"ignored": True}}
    stored = await api.ok("POST", path, flink)
    assert stored["metadata"]["generation"] == 1 and "status" not in stored
    listed = await api.ok("GET", path)
    assert listed["items"][0]["kind"] == "FlinkDeployment"  # custom resources keep their kind in lists

    await api.ok("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
    assert (await api.get(path))[0] == 404
    bad = dict(crd, metadata={"name": "wrong.name"})
    status, invalid = await api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert (status, invalid["reason"]) == (422, "Invalid")


async def test_add_crd_library_call(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.add_crd("example.com", "v1", "Policy", namespaced=False)
    cluster.add_crd("example.com", "v1", "Policy", namespaced=False)  # idempotent
    api = kube_http(cluster)
    await api.ok("POST", "/apis/example.com/v1/policies", {"apiVersion": "example.com/v1", "kind": "Policy",
                                                            "metadata": {"name": "p"}})
    assert (await api.ok("GET", "/apis/example.com/v1/policies/p"))["metadata"]["name"] == "p"


async def test_nodes_have_capacity_and_ready_conditions(start_sim: StartSim,
                                                        kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim(nodes=2, node_cpu="4", node_memory="16Gi", node_pods=50)
    nodes = (await kube_http(server.cluster("member1")).ok("GET", "/api/v1/nodes"))["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["member1-node-1", "member1-node-2"]
    for node in nodes:
        assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "50"}
        assert node["status"]["capacity"] == node["status"]["allocatable"]
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"
