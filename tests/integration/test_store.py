"""The object store against a real etcd: CAS, finalizers, generation, lists."""

from __future__ import annotations

import asyncio

import pytest

from flotilla.api.v1 import cluster_pb2
from flotilla.store import AlreadyExists, Conflict, NotFound, Store
from tests.factories import make_cluster


async def test_create_get_and_create_twice_fails(store: Store) -> None:
    created = await store.create(make_cluster("member1"))
    assert created.metadata.uid
    assert created.metadata.generation == 1
    assert int(created.metadata.resource_version) > 0
    got = await store.get(cluster_pb2.Cluster, "", "member1")
    assert got == created
    with pytest.raises(AlreadyExists):
        await store.create(make_cluster("member1"))
    with pytest.raises(NotFound):
        await store.get(cluster_pb2.Cluster, "", "nope")


async def test_update_is_compare_and_swap(store: Store) -> None:
    first = await store.create(make_cluster("member1"))
    stale = cluster_pb2.Cluster()
    stale.CopyFrom(first)
    first.spec.region = "eu"
    updated = await store.update(first)
    assert int(updated.metadata.resource_version) > int(stale.metadata.resource_version)
    stale.spec.region = "us"
    with pytest.raises(Conflict):
        await store.update(stale)
    assert (await store.get(cluster_pb2.Cluster, "", "member1")).spec.region == "eu"


async def test_unchanged_update_writes_nothing(store: Store) -> None:
    created = await store.create(make_cluster("member1"))
    again = await store.update(created)
    assert again.metadata.resource_version == created.metadata.resource_version


async def test_generation_follows_spec_not_metadata(store: Store) -> None:
    obj = await store.create(make_cluster("member1"))
    obj.metadata.labels["team"] = "a"
    obj = await store.update(obj)
    assert obj.metadata.generation == 1
    obj.spec.provider = "aws"
    obj = await store.update(obj)
    assert obj.metadata.generation == 2


async def test_status_and_spec_are_written_separately(store: Store) -> None:
    obj = await store.create(make_cluster("member1"))
    obj.status.kubernetes_version = "v1.30.0"
    obj.spec.provider = "gcp"
    # A status update ignores spec changes...
    obj = await store.update_status(obj)
    assert obj.status.kubernetes_version == "v1.30.0"
    assert obj.spec.provider == ""
    # ...and a spec update ignores status changes.
    obj.status.kubernetes_version = "v0"
    obj.spec.provider = "gcp"
    obj = await store.update(obj)
    assert obj.status.kubernetes_version == "v1.30.0"
    assert obj.spec.provider == "gcp"


async def test_finalizers_hold_deletion(store: Store) -> None:
    obj = make_cluster("member1")
    obj.metadata.finalizers.append("karmada.io/cluster-controller")
    await store.create(obj)
    marked = await store.delete(cluster_pb2.Cluster, "", "member1")
    assert marked is not None and marked.metadata.HasField("deletion_timestamp")
    # Deleting again keeps the first deletionTimestamp.
    again = await store.delete(cluster_pb2.Cluster, "", "member1")
    assert again.metadata.deletion_timestamp == marked.metadata.deletion_timestamp
    # An update cannot clear deletionTimestamp.
    again.metadata.ClearField("deletion_timestamp")
    again.metadata.labels["x"] = "y"
    kept = await store.update(again)
    assert kept.metadata.HasField("deletion_timestamp")
    # Removing the last finalizer removes the object.
    del kept.metadata.finalizers[:]
    await store.update(kept)
    with pytest.raises(NotFound):
        await store.get(cluster_pb2.Cluster, "", "member1")


async def test_delete_without_finalizers_and_stale_version(store: Store) -> None:
    obj = await store.create(make_cluster("member1"))
    obj.spec.region = "eu"
    await store.update(obj)
    with pytest.raises(Conflict):
        await store.delete(cluster_pb2.Cluster, "", "member1", resource_version=obj.metadata.resource_version)
    assert await store.delete(cluster_pb2.Cluster, "", "member1") is None
    assert await store.try_get(cluster_pb2.Cluster, "", "member1") is None


async def test_list_with_label_selector_returns_revision(store: Store) -> None:
    await store.create(make_cluster("a", env="prod"))
    await store.create(make_cluster("b", env="dev"))
    last = await store.create(make_cluster("c", env="prod"))
    listed = await store.list(cluster_pb2.Cluster, label_selector={"env": "prod"})
    assert [o.metadata.name for o in listed.items] == ["a", "c"]
    assert listed.revision >= int(last.metadata.resource_version)


async def test_concurrent_read_modify_write_loses_no_update(store: Store) -> None:
    await store.create(make_cluster("counter"))
    writers, increments = 20, 10

    def bump(obj: cluster_pb2.Cluster) -> None:
        obj.metadata.annotations["count"] = str(int(obj.metadata.annotations.get("count", "0")) + 1)

    async def writer() -> None:
        for _ in range(increments):
            await store.mutate(cluster_pb2.Cluster, "", "counter", bump)

    await asyncio.gather(*(writer() for _ in range(writers)))
    final = await store.get(cluster_pb2.Cluster, "", "counter")
    assert int(final.metadata.annotations["count"]) == writers * increments
