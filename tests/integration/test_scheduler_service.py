"""The scheduler service as a process on a real etcd: the seed nginx case scheduled live,
member1 evicted and the replicas moved, then `flotillactl explain` and `whatif` through
the live gRPC service."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from flotilla.api import codec, registry
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import PP_PERMANENT_ID_LABEL, TRACEPARENT_ANNOTATION
from flotilla.rules.binding_builder import build_binding
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from tests.conftest import start_service, stop_service
from tests.factories import EXAMPLES_DIR
from tests.scheduler_support import Bindings, cluster, flotillactl, placed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def scheduler(etcd: EmbeddedEtcd, webhook: subprocess.Popen[bytes],
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    # The webhook authorizes the calls of explain and whatif (flotilla.runtime.delegated_authorization).
    proc = start_service("scheduler", etcd, tmp_path_factory.mktemp("scheduler"), "--leader-elect-lease-duration", "3s")
    yield proc
    stop_service(proc)


def seed_binding() -> work_pb2.ResourceBinding:
    template, policy = (codec.from_dict(d) for d in
                        codec.load_yaml_documents((EXAMPLES_DIR / "nginx-divided.yaml").read_text()))
    template.metadata.uid = "4858ca61-3ff8-4095-8267-f3d059d8074c"
    # As admission stamps it: the label that says a policy claimed the binding.
    policy.metadata.labels[PP_PERMANENT_ID_LABEL] = "2f1c0c1e-5d7e-4d6e-9a51-6b1f3d0c9a77"
    return build_binding(template, policy)


async def test_seed_scheduled_then_member1_evicted(store: Store, etcd: EmbeddedEtcd,
                                                   scheduler: subprocess.Popen[bytes]) -> None:
    for name in ("member1", "member2", "member3"):
        await store.create(cluster(name))
    view = Bindings(store, registry.RESOURCE_BINDING)
    events = Bindings(store, registry.EVENT)
    tasks = [asyncio.create_task(v.informer.run()) for v in (view, events)]
    try:
        await view.informer.wait_synced()
        await store.create(seed_binding())
        binding = await view.wait("default/nginx-deployment", placed(("member1", 1), ("member2", 2)))
        assert binding.metadata.annotations["policy.karmada.io/applied-placement"]
        assert binding.status.HasField("last_scheduled_time")

        # The taint manager's eviction: member1 moves to a graceful eviction task, and the
        # failover trace it started is stamped on the binding.
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

        def evict(obj: Any) -> bool:
            del obj.spec.clusters[0]
            obj.spec.graceful_eviction_tasks.add(from_cluster="member1", replicas=1, reason="TaintUntolerated",
                                                 producer="TaintManager", purge_mode="Gracefully")
            obj.metadata.annotations[TRACEPARENT_ANNOTATION] = parent
            return True

        def taint(obj: Any) -> bool:
            obj.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute")
            return True

        await store.mutate(registry.CLUSTER, "", "member1", taint)
        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", evict)
        binding = await view.wait("default/nginx-deployment", placed(("member2", 3)))
        # The reschedule continues the failover trace: same trace id, a new span.
        stamped = binding.metadata.annotations[TRACEPARENT_ANNOTATION]
        assert stamped.split("-")[1] == parent.split("-")[1] and stamped != parent

        code, explained, _ = await flotillactl(etcd.endpoint, "explain", "rb", "nginx-deployment",
                                               "-n", "default", "-o", "json")
        assert code == 0
        assert explained["clusters"] == [{"name": "member2", "replicas": 3}]
        assert explained["current"] == [{"name": "member2", "replicas": 3}]
        assert explained["error"] is None and explained["trigger"] == "None"
        assert {f["cluster"]: f["plugin"] for f in explained["filtered"]} == {
            "member1": "ClusterEviction", "member3": "ClusterAffinity"}

        code, forecast, _ = await flotillactl(etcd.endpoint, "whatif", "fail", "member2", "-o", "json")
        assert code == 0
        assert forecast["failed"] == ["member2"]
        [nginx] = forecast["bindings"]
        assert nginx["before"] == [{"name": "member2", "replicas": 3}]
        assert nginx["after"] == [] and nginx["reason"] == "NoClusterFit"
        assert forecast["unplaced"] == ["rb/default/nginx-deployment"]

        moved = await events.wait_any(lambda e: e.involved_object.name == "nginx-deployment"
                                      and e.message.endswith("Result: {member2:3}"))
        assert (moved.type, moved.reason) == ("Normal", "ScheduleBindingSucceed")
    finally:
        for task in tasks:
            task.cancel()
