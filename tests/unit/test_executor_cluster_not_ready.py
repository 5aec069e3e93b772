"""A Work whose cluster is not Ready waits for it: one reconcile and a slow safety-net recheck,
not an error retried with backoff from 5 ms (the cluster turning Ready re-enqueues it)."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER
from flotilla.member import MemberClient
from flotilla.store import MemoryStore
from services.executor.execution import CLUSTER_NOT_READY_RECHECK, ExecutionReconciler
from tests.unit.cache_fake import Cache


def cluster(ready: str) -> cluster_pb2.Cluster:
    obj = cluster_pb2.Cluster()
    obj.metadata.name = "member1"
    obj.status.conditions.add(type="Ready", status=ready)
    return obj


def work(deleting: bool) -> work_pb2.Work:
    obj = work_pb2.Work()
    obj.metadata.namespace, obj.metadata.name = execution_namespace("member1"), "web"
    obj.metadata.generation = 1
    obj.metadata.finalizers.append(EXECUTION_FINALIZER)
    if deleting:
        obj.metadata.deletion_timestamp.FromSeconds(1)
    obj.spec.workload.manifests.append(codec.raw_json(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "default", "name": "web"}}))
    return obj


@pytest.mark.parametrize("deleting", [False, True])
async def test_a_work_waits_for_its_cluster_without_an_error(deleting: bool) -> None:
    async def connect(_: Any) -> MemberClient:
        raise AssertionError("a cluster that is not Ready is not called")

    target = work(deleting)
    reconciler = ExecutionReconciler(MemoryStore(), FakeClock(), Cache([target]), Cache(), connect,  # type: ignore[arg-type]
                                     lambda _: True)
    reconciler.clusters.objects["member1"] = cluster("False")  # type: ignore[attr-defined]
    result = await reconciler.reconcile(f"{target.metadata.namespace}/web")
    assert result is not None and result.requeue_after == CLUSTER_NOT_READY_RECHECK
