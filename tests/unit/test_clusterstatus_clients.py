"""MemberClients takes its credentials from any loader (a cached one spares etcd a read at every
call), and builds a new client when they change (issue 14: a rotated token or CA takes effect)."""

from __future__ import annotations

from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.clients import MemberClients
from flotilla.member import Credentials
from flotilla.store.memory import MemoryStore


async def test_a_client_per_cluster_rebuilt_when_its_credentials_change(memory_store: MemoryStore) -> None:
    current = Credentials("https://127.0.0.1:1", "t1")

    async def load(_: cluster_pb2.Cluster) -> Credentials:
        return current

    clients = MemberClients(memory_store, timeout=1.0, credentials=load)
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    first = await clients.get(cluster)
    assert first.credentials == current and await clients.get(cluster) is first
    current = Credentials("https://127.0.0.1:1", "t2")
    second = await clients.get(cluster)
    assert second is not first and second.credentials.token == "t2"
    await clients.close()
