"""Workload simulation on a FakeClock: pods within capacity, Ready after the delay, statuses as
Kubernetes' controllers write them, scaling, application faults."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from flotilla.aio.clock import FakeClock

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)

NS = "/apis/apps/v1/namespaces/default"
PODS = "/api/v1/namespaces/default/pods"
DELAY = 2.0
EPSILON = 0.001


def template(name: str, cpu: str | None = None, memory: str | None = None, limits: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if amounts:
        resources = {"limits": amounts} if limits else {"requests": amounts}
    return {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]}}


def workload(kind: str, name: str, replicas: int | None = 1, **template_args: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": template(name, **template_args)}
    if replicas is not None:
        spec["replicas"] = replicas
    group = "batch/v1" if kind == "Job" else "apps/v1"
    if kind == "Job":
        spec = {"template": spec["template"]}
        spec["template"]["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name}, "spec": spec}


class Cluster:
    """A one-cluster sim with helpers to read workloads and pods."""

    def __init__(self, api: KubeHttp, clock: FakeClock) -> None:
        self.api = api
        self.clock = clock

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.api.ok("POST", path, body)

    async def status(self, path: str) -> dict[str, Any]:
        return (await self.api.ok("GET", path)).get("status") or {}

    async def pods(self, selector: str = "") -> list[dict[str, Any]]:
        params = {"labelSelector": selector} if selector else {}
        return (await self.api.ok("GET", PODS, **params))["items"]

    async def ready_pods(self, selector: str = "") -> int:
        return sum(1 for p in await self.pods(selector) if _ready(p))


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


@pytest.fixture
async def cluster(start_sim: StartSim, kube_http: Callable[..., KubeHttp], sim_clock: FakeClock) -> Cluster:
    server = await start_sim(nodes=1, node_cpu="8", node_memory="32Gi", node_pods=110, pod_ready_delay=DELAY)
    return Cluster(kube_http(server.cluster("member1")), sim_clock)


async def test_deployment_pods_fit_capacity_and_become_ready_exactly_after_the_delay(cluster: Cluster) -> None:
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 3, cpu="4", memory="1Gi"))
    pods = await cluster.pods("app=web")
    assert len(pods) == 3
    bound = [p for p in pods if p["spec"].get("nodeName")]
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    assert len(bound) == 2 and len(pending) == 1
    scheduled = pending[0]["status"]["conditions"][0]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert scheduled["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    owner = bound[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    assert bound[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "1Gi"}
    assert bound[0]["spec"]["nodeName"] == "member1-node-1"

    await cluster.clock.advance(DELAY - EPSILON)
    assert await cluster.ready_pods("app=web") == 0
    await cluster.clock.advance(EPSILON)
    assert await cluster.ready_pods("app=web") == 2

    status = await cluster.status(f"{NS}/deployments/web")
    conditions = {c["type"]: c for c in status.pop("conditions")}
    assert status == {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 2,
                      "availableReplicas": 2, "unavailableReplicas": 1}
    assert (conditions["Available"]["status"], conditions["Available"]["reason"]) == (
        "False", "MinimumReplicasUnavailable")
    assert conditions["Progressing"]["reason"] == "ReplicaSetUpdated"
    await cluster.clock.advance(60)
    assert await cluster.ready_pods("app=web") == 2  # the third never fits


async def test_scale_down_frees_capacity_for_pending_pods(cluster: Cluster) -> None:
    await cluster.create(f"{NS}/deployments", workload("Deployment", "big", 2, cpu="6"))
    await cluster.create(f"{NS}/deployments", workload("Deployment", "small", 1, cpu="4"))
    await cluster.clock.advance(DELAY)
    assert await cluster.ready_pods("app=big") == 1
    assert await cluster.ready_pods("app=small") == 0
    await cluster.api.ok("PATCH", f"{NS}/deployments/big", {"spec": {"replicas": 0}},
                         content_type="application/merge-patch+json")
    assert await cluster.pods("app=big") == []
    big = await cluster.status(f"{NS}/deployments/big")
    assert big["observedGeneration"] == 2 and "replicas" not in big  # zero counts are omitted
    assert {c["type"]: c["status"] for c in big["conditions"]} == {"Available": "True", "Progressing": "True"}
    small = await cluster.pods("app=small")
    assert small[0]["spec"]["nodeName"] == "member1-node-1"
    await cluster.clock.advance(DELAY)
    status = await cluster.status(f"{NS}/deployments/small")
    assert status["readyReplicas"] == status["availableReplicas"] == 1
    assert {c["type"]: c["reason"] for c in status["conditions"]} == {
        "Available": "MinimumReplicasAvailable", "Progressing": "NewReplicaSetAvailable"}


async def test_app_fault_drops_readiness_and_recover_restores_it(start_sim: StartSim,
                                                                 kube_http: Callable[..., KubeHttp],
                                                                 sim_clock: FakeClock) -> None:
    server = await start_sim(pod_ready_delay=DELAY)
    sim = server.cluster("member1")
    cluster = Cluster(kube_http(sim), sim_clock)
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 2))
    await cluster.create(f"{NS}/deployments", workload("Deployment", "other", 1))
    await sim_clock.advance(DELAY)
    assert (await cluster.status(f"{NS}/deployments/web"))["readyReplicas"] == 2

    sim.set_app_fault("default", "web", healthy=False, kind="Deployment")
    status = await cluster.status(f"{NS}/deployments/web")
    assert "readyReplicas" not in status and "availableReplicas" not in status
    available = next(c for c in status["conditions"] if c["type"] == "Available")
    assert available["status"] == "False"
    crashed = (await cluster.pods("app=web"))[0]
    assert crashed["status"]["phase"] == "Running"
    assert crashed["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert (await cluster.status(f"{NS}/deployments/other"))["readyReplicas"] == 1  # others unaffected

    await cluster.api.ok("PATCH", f"{NS}/deployments/web", {"spec": {"replicas": 3}},
                         content_type="application/merge-patch+json")
    await sim_clock.advance(DELAY)
    assert await cluster.ready_pods("app=web") == 0  # new pods crash too while the fault lasts

    sim.set_app_fault("default", "web", healthy=True)
    assert await cluster.ready_pods("app=web") == 0  # containers restart...
    await sim_clock.advance(DELAY)
    status = await cluster.status(f"{NS}/deployments/web")  # ...and pass readiness after the delay
    assert status["readyReplicas"] == status["availableReplicas"] == 3
    assert next(c for c in status["conditions"] if c["type"] == "Available")["status"] == "True"


async def test_deleting_a_workload_deletes_its_pods(cluster: Cluster) -> None:
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 2))
    await cluster.create(f"{NS}/replicasets", workload("ReplicaSet", "rs", 2))
    assert len(await cluster.pods()) == 4
    await cluster.api.ok("DELETE", f"{NS}/deployments/web")
    assert [p["metadata"]["name"].startswith("rs-") for p in await cluster.pods()] == [True, True]


async def test_a_deleted_pod_is_replaced(cluster: Cluster) -> None:
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 1))
    first = (await cluster.pods())[0]["metadata"]["name"]
    await cluster.api.ok("DELETE", f"{PODS}/{first}")
    pods = await cluster.pods()
    assert len(pods) == 1 and pods[0]["metadata"]["name"] != first


async def test_template_change_rolls_out_new_pods_then_retires_old(cluster: Cluster) -> None:
    body = workload("Deployment", "web", 2)
    await cluster.create(f"{NS}/deployments", body)
    await cluster.clock.advance(DELAY)
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    live = await cluster.api.ok("GET", f"{NS}/deployments/web")
    await cluster.api.ok("PUT", f"{NS}/deployments/web", dict(live, spec=body["spec"]))
    status = await cluster.status(f"{NS}/deployments/web")
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (4, 2, 2)
    assert status["observedGeneration"] == 2
    await cluster.clock.advance(DELAY)
    pods = await cluster.pods()
    assert len(pods) == 2 and {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.28"}
    status = await cluster.status(f"{NS}/deployments/web")
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (2, 2, 2)


async def test_statefulset_creates_pods_in_order_and_reports_revisions(cluster: Cluster) -> None:
    await cluster.create(f"{NS}/statefulsets", workload("StatefulSet", "db", 3))
    assert [p["metadata"]["name"] for p in await cluster.pods()] == ["db-0"]
    for expected in (["db-0", "db-1"], ["db-0", "db-1", "db-2"]):
        await cluster.clock.advance(DELAY)
        assert [p["metadata"]["name"] for p in await cluster.pods()] == expected
    await cluster.clock.advance(DELAY)
    status = await cluster.status(f"{NS}/statefulsets/db")
    revision = status["updateRevision"]
    assert revision.startswith("db-")
    assert status == {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
                      "updatedReplicas": 3, "availableReplicas": 3, "currentRevision": revision,
                      "updateRevision": revision, "collisionCount": 0}
    pod = (await cluster.pods())[2]
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-2"
    assert pod["spec"]["hostname"] == "db-2"

    await cluster.api.ok("PATCH", f"{NS}/statefulsets/db", {"spec": {"replicas": 1}},
                         content_type="application/merge-patch+json")
    assert [p["metadata"]["name"] for p in await cluster.pods()] == ["db-0"]


async def test_job_pods_complete_after_the_delay(cluster: Cluster) -> None:
    job = workload("Job", "once", None)
    job["spec"].update({"completions": 2, "parallelism": 1})
    await cluster.create("/apis/batch/v1/namespaces/default/jobs", job)
    path = "/apis/batch/v1/namespaces/default/jobs/once"
    status = await cluster.status(path)
    assert (status["active"], status["ready"], status.get("succeeded")) == (1, 0, None)
    await cluster.clock.advance(DELAY)
    status = await cluster.status(path)
    assert (status["active"], status["succeeded"]) == (1, 1)
    await cluster.clock.advance(DELAY)
    status = await cluster.status(path)
    assert "active" not in status and status["succeeded"] == 2
    complete = status["conditions"][0]
    assert (complete["type"], complete["status"]) == ("Complete", "True")
    assert status["completionTime"]
    pods = await cluster.pods("job-name=once")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]


async def test_daemonset_runs_one_pod_per_node(start_sim: StartSim, kube_http: Callable[..., KubeHttp],
                                               sim_clock: FakeClock) -> None:
    server = await start_sim(nodes=3, pod_ready_delay=DELAY)
    cluster = Cluster(kube_http(server.cluster("member1")), sim_clock)
    await cluster.create(f"{NS}/daemonsets", workload("DaemonSet", "agent", None))
    await sim_clock.advance(DELAY)
    pods = await cluster.pods()
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["member1-node-1", "member1-node-2", "member1-node-3"]
    status = await cluster.status(f"{NS}/daemonsets/agent")
    assert status == {"currentNumberScheduled": 3, "numberMisscheduled": 0, "desiredNumberScheduled": 3,
                      "numberReady": 3, "observedGeneration": 1, "updatedNumberScheduled": 3, "numberAvailable": 3}


async def test_limits_default_requests_and_pods_spread_over_nodes(start_sim: StartSim,
                                                                  kube_http: Callable[..., KubeHttp],
                                                                  sim_clock: FakeClock) -> None:
    server = await start_sim(nodes=2, node_cpu="2", pod_ready_delay=DELAY)
    cluster = Cluster(kube_http(server.cluster("member1")), sim_clock)
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 3, cpu="1", memory="1Gi", limits=True))
    pods = await cluster.pods()
    assert pods[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert pods[0]["status"]["qosClass"] == "Guaranteed"
    # Least-allocated placement spreads the pods; the third goes to the first node by name.
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["member1-node-1", "member1-node-1", "member1-node-2"]


async def test_services_ingresses_claims_and_budgets_get_status(cluster: Cluster) -> None:
    core, net = "/api/v1/namespaces/default", "/apis/networking.k8s.io/v1/namespaces/default"
    await cluster.create(f"{core}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
                                              "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    assert (await cluster.status(f"{core}/services/lb"))["loadBalancer"]["ingress"][0]["ip"]
    await cluster.create(f"{net}/ingresses", {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                              "metadata": {"name": "in"}, "spec": {}})
    assert (await cluster.status(f"{net}/ingresses/in"))["loadBalancer"]["ingress"][0]["ip"]
    await cluster.create(f"{core}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    assert (await cluster.status(f"{core}/persistentvolumeclaims/data"))["phase"] == "Bound"

    await cluster.create("/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 2))
    await cluster.clock.advance(DELAY)
    pdb = await cluster.status("/apis/policy/v1/namespaces/default/poddisruptionbudgets/web")
    assert (pdb["currentHealthy"], pdb["desiredHealthy"], pdb["expectedPods"], pdb["disruptionsAllowed"]) == (
        2, 1, 2, 1)


async def test_losing_a_node_moves_its_pods_where_capacity_remains(start_sim: StartSim,
                                                                   kube_http: Callable[..., KubeHttp],
                                                                   sim_clock: FakeClock) -> None:
    server = await start_sim(nodes=2, node_cpu="2", pod_ready_delay=DELAY)
    cluster = Cluster(kube_http(server.cluster("member1")), sim_clock)
    await cluster.create(f"{NS}/deployments", workload("Deployment", "web", 3, cpu="1"))
    await sim_clock.advance(DELAY)
    assert await cluster.ready_pods() == 3
    await cluster.api.ok("DELETE", "/api/v1/nodes/member1-node-2")
    pods = await cluster.pods()
    assert len(pods) == 3
    assert sorted(p["spec"].get("nodeName", "") for p in pods) == ["", "member1-node-1", "member1-node-1"]
    status = await cluster.status(f"{NS}/deployments/web")
    assert (status["readyReplicas"], status["unavailableReplicas"]) == (2, 1)
