"""One MemberClient per cluster, rebuilt when the cluster's endpoint or credentials change."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from flotilla.api.v1 import cluster_pb2
from flotilla.member import Credentials, MemberClient
from flotilla.rules.cluster_secrets import load_credentials
from flotilla.store import ObjectStore


class MemberClients:
    def __init__(self, store: ObjectStore, timeout: float,
                 credentials: Callable[[cluster_pb2.Cluster], Awaitable[Credentials]] | None = None) -> None:
        self.store = store
        self.timeout = timeout
        # `CachedCredentials(...).load` spares etcd a read at every call.
        self._credentials = credentials or self._from_store
        self._clients: dict[str, tuple[Credentials, MemberClient]] = {}

    async def _from_store(self, cluster: cluster_pb2.Cluster) -> Credentials:
        return await load_credentials(self.store, cluster)

    async def get(self, cluster: cluster_pb2.Cluster) -> MemberClient:
        credentials = await self._credentials(cluster)
        name = cluster.metadata.name
        cached = self._clients.get(name)
        if cached is not None and cached[0] == credentials:
            return cached[1]
        if cached is not None:
            await cached[1].close()
        client = MemberClient(credentials, timeout=self.timeout)
        self._clients[name] = (credentials, client)
        return client

    async def drop(self, name: str) -> None:
        cached = self._clients.pop(name, None)
        if cached is not None:
            await cached[1].close()

    async def close(self) -> None:
        for name in list(self._clients):
            await self.drop(name)
