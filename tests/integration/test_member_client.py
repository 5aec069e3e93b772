"""MemberClient (the REST path a real cluster would see) against the
simulator: kubeconfig, health under each fault, discovery, apply/get/list/delete, summaries."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.member import Health, MemberClient, MemberError, load_kubeconfig, node_summary, resource_summary

if TYPE_CHECKING:
    from tests.sim_fixtures import StartSim

pytestmark = pytest.mark.timeout(15)

MakeClient = Callable[..., MemberClient]


def deployment(replicas: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "demo", "labels": {"app": "nginx"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [
                     {"name": "nginx", "image": "nginx:1.27",
                      "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}]}}},
    }


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "settings", "namespace": "demo", "labels": {"app": "nginx"}},
             "data": {"mode": "blue"}}


async def test_load_kubeconfig_reads_what_the_sim_wrote(start_sim: StartSim) -> None:
    server = await start_sim()
    creds = load_kubeconfig(server.kubeconfig_path("member1"))
    assert creds.server == server.url("member1")
    assert creds.token == server.cluster("member1").token
    assert server.tls is not None and base64.b64decode(creds.ca_data) == server.tls.ca_pem
    assert creds.server.startswith("https://") and not creds.insecure_skip_tls_verify


async def test_health_follows_the_clusters_faults(start_sim: StartSim, member_client: MakeClient) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    client = member_client(server, timeout=0.5)
    assert await client.health() == Health(online=True, healthy=True)
    cluster.set_fault("down")
    assert await client.health() == Health(online=False, healthy=False)
    cluster.set_fault("unreachable")
    assert await client.health() == Health(online=False, healthy=False)  # after the 0.5 s timeout
    # /readyz answers 500: the server is there but unhealthy (the ClusterNotReady).
    cluster.set_fault("unhealthy")
    assert await client.health() == Health(online=True, healthy=False)
    cluster.set_fault("recover")
    cluster.health_status = 202
    assert await client.health() == Health(online=True, healthy=False)
    cluster.health_status = 200
    assert await client.health() == Health(online=True, healthy=True)


async def test_health_falls_back_to_healthz_only_when_readyz_is_404(start_sim: StartSim,
                                                                    member_client: MakeClient) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    client = member_client(server)
    cluster.serve_readyz = False
    assert await client.health() == Health(online=True, healthy=True)  # from /healthz
    cluster.health_status = 202
    assert await client.health() == Health(online=True, healthy=False)  # /healthz said 202
    cluster.health_status = 200
    cluster.set_fault("unhealthy")
    assert await client.health() == Health(online=True, healthy=False)  # /healthz said 500


async def test_version_and_api_enablements(start_sim: StartSim, member_client: MakeClient) -> None:
    server = await start_sim()
    server.cluster("member1").add_crd("flink.apache.org", "v1beta1", "FlinkDeployment")
    client = member_client(server)
    assert await client.version() == "v1.31.0"
    enablements = await client.api_enablements()
    group_versions = [gv for gv, _ in enablements]
    assert group_versions == sorted(group_versions)
    assert group_versions == ["apiextensions.k8s.io/v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1",
                              "flink.apache.org/v1beta1", "networking.k8s.io/v1", "policy/v1", "v1"]
    resources = dict(enablements)
    assert resources["apps/v1"] == [("daemonsets", "DaemonSet"), ("deployments", "Deployment"),
                                    ("replicasets", "ReplicaSet"), ("statefulsets", "StatefulSet")]
    assert resources["flink.apache.org/v1beta1"] == [("flinkdeployments", "FlinkDeployment")]
    for _, listed in enablements:
        assert [name for name, _ in listed] == sorted(name for name, _ in listed)
        assert all("/" not in name for name, _ in listed)


async def test_apply_get_list_delete_round_trip(start_sim: StartSim, member_client: MakeClient,
                                                sim_clock: FakeClock) -> None:
    server = await start_sim(pod_ready_delay=2.0)
    client = member_client(server)
    applied = await client.apply(deployment(replicas=2))
    assert applied["metadata"]["generation"] == 1
    assert (await client.apply(CONFIGMAP))["data"] == {"mode": "blue"}
    await sim_clock.advance(2)

    live = await client.get("apps/v1", "Deployment", "demo", "nginx")
    assert live is not None and live["status"]["readyReplicas"] == 2
    assert live["status"]["observedGeneration"] == live["metadata"]["generation"]
    assert (await client.get("v1", "ConfigMap", "demo", "settings"))["data"] == {"mode": "blue"}
    assert await client.get("v1", "ConfigMap", "demo", "missing") is None

    reapplied = await client.apply(deployment(replicas=3), field_manager="someone-else")
    assert reapplied["spec"]["replicas"] == 3 and reapplied["metadata"]["generation"] == 2
    assert reapplied["status"]["readyReplicas"] == 2  # status survives an apply

    listed = await client.list("apps/v1", "Deployment", namespace="demo")
    assert [(d["kind"], d["apiVersion"], d["metadata"]["name"]) for d in listed] == [
        ("Deployment", "apps/v1", "nginx")]
    assert len(await client.list("v1", "ConfigMap", label_selector="app=nginx")) == 1
    assert await client.list("v1", "ConfigMap", namespace="other") == []
    pods = await client.list("v1", "Pod", namespace="demo", label_selector="app=nginx")
    assert len(pods) == 3 and pods[0]["kind"] == "Pod"

    assert await client.delete("apps/v1", "Deployment", "demo", "nginx") is True
    assert await client.delete("apps/v1", "Deployment", "demo", "nginx") is False
    assert await client.delete("v1", "ConfigMap", "demo", "settings") is True
    assert await client.get("apps/v1", "Deployment", "demo", "nginx") is None
    assert await client.list_pods() == []


async def test_kinds_from_crds_installed_later_are_found(start_sim: StartSim, member_client: MakeClient) -> None:
    server = await start_sim()
    client = member_client(server)
    flink = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
             "metadata": {"name": "job", "namespace": "demo"}, "spec": {"job": {"parallelism": 2}}}
    with pytest.raises(MemberError, match="does not serve this kind") as missing:
        await client.apply(flink)
    assert missing.value.status == 404
    server.cluster("member1").add_crd("flink.apache.org", "v1beta1", "FlinkDeployment")
    assert (await client.apply(flink))["spec"] == {"job": {"parallelism": 2}}
    assert [f["metadata"]["name"] for f in await client.list("flink.apache.org/v1beta1", "FlinkDeployment")] == ["job"]


async def test_node_and_resource_summaries(start_sim: StartSim, member_client: MakeClient,
                                           sim_clock: FakeClock) -> None:
    server = await start_sim(nodes=2, node_cpu="4", node_memory="16Gi", node_pods=110)
    client = member_client(server)
    await client.apply(deployment(replicas=5, cpu="1500m"))  # 2 fit per node, the fifth waits
    await sim_clock.advance(2)
    nodes, pods = await client.list_nodes(), await client.list_pods()
    assert node_summary(nodes) == {"totalNum": 2, "readyNum": 2}
    assert resource_summary(nodes, pods) == {
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "220"},
        "allocating": {"cpu": "1500m", "memory": "512Mi", "pods": "1"},
        "allocated": {"cpu": "6", "memory": "2Gi", "pods": "4"},
    }


async def test_errors_name_the_server_and_what_failed(start_sim: StartSim, member_client: MakeClient) -> None:
    server = await start_sim()
    good = member_client(server)
    bad = MemberClient(replace(good.credentials, token="wrong"), timeout=2)
    try:
        with pytest.raises(MemberError) as raised:
            await bad.version()
        assert server.url("member1") in str(raised.value)
        assert "get version: HTTP 401: Unauthorized" in str(raised.value)
        assert (raised.value.status, raised.value.reason) == (401, "Unauthorized")
        assert await bad.health() == Health(online=False, healthy=False)
    finally:
        await bad.close()

    server.cluster("member1").set_fault("down")
    with pytest.raises(MemberError, match="list nodes: unreachable") as raised:
        await good.list_nodes()
    assert raised.value.server == server.url("member1") and raised.value.status is None
    server.cluster("member1").set_fault("unreachable")
    short = member_client(server, timeout=0.3)
    with pytest.raises(MemberError, match=r"get version: timed out after 0.3s"):
        await short.version()
