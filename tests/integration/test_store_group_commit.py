"""Group commit through a real etcd: operations under way together travel as one transaction,
and each keeps its own compare-and-swap (flotilla/store/group_commit.py)."""

from __future__ import annotations

import asyncio

from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.store import AlreadyExists, Conflict, Store


def cluster(name: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name = name
    return c


async def test_concurrent_writes_share_transactions_and_each_gets_its_own_revision(store: Store) -> None:
    created = await asyncio.gather(*(store.create(cluster(f"m{i}")) for i in range(200)))
    group = store._group
    assert group is not None
    assert group.batches < group.ops
    for c in created:
        got = await store.get(registry.CLUSTER, "", c.metadata.name)
        assert got.metadata.resource_version == c.metadata.resource_version
    # Creates of names that exist fail alone, beside creates that succeed.
    results = await asyncio.gather(*(store.create(cluster(f"m{i}")) for i in range(195, 205)),
                                   return_exceptions=True)
    assert [isinstance(r, AlreadyExists) for r in results] == [True] * 5 + [False] * 5


async def test_a_stale_compare_fails_alone_in_a_shared_transaction(store: Store) -> None:
    names = [f"m{i}" for i in range(40)]
    current = {c.metadata.name: c for c in await asyncio.gather(*(store.create(cluster(n)) for n in names))}
    # Every other cluster changes under the writers' feet.
    for name in names[::2]:
        moved = cluster_pb2.Cluster()
        moved.CopyFrom(current[name])
        moved.spec.provider = "elsewhere"
        await store.update(moved)

    async def write(name: str) -> str:
        mine = cluster_pb2.Cluster()
        mine.CopyFrom(current[name])
        mine.spec.region = "r1"
        try:
            await store.update(mine)
        except Conflict:
            return "conflict"
        return "written"

    before = store._group.batches if store._group else 0
    results = await asyncio.gather(*(write(n) for n in names))
    assert results == ["conflict", "written"] * 20
    assert store._group is not None and store._group.batches - before < len(names)
    for name in names[1::2]:
        assert (await store.get(registry.CLUSTER, "", name)).spec.region == "r1"


async def test_a_write_on_a_lapsed_lease_fails_alone(store: Store) -> None:
    lease = await store.grant_lease(60)
    await store.revoke_lease(lease)
    results = await asyncio.gather(store.create(cluster("leased"), lease=lease),
                                   *(store.create(cluster(f"m{i}")) for i in range(5)), return_exceptions=True)
    assert isinstance(results[0], Exception)
    assert all(isinstance(r, cluster_pb2.Cluster) for r in results[1:])
    assert await store.try_get(registry.CLUSTER, "", "leased") is None
