"""Informers see every change exactly once, in order, across restarts and compaction."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from flotilla.api.v1 import cluster_pb2
from flotilla.store import EventType, Informer, Store
from flotilla.store.embedded import EmbeddedEtcd
from tests.factories import make_cluster


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self._changed = asyncio.Condition()

    async def __call__(self, kind: EventType, obj: cluster_pb2.Cluster, old: object) -> None:
        self.seen.append((kind.value, obj.metadata.name, obj.metadata.annotations.get("n", "")))
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, count: int, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.seen) >= count)


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 10)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def bump(store: Store, name: str, n: int) -> None:
    def change(obj: cluster_pb2.Cluster) -> None:
        obj.metadata.annotations["n"] = str(n)

    await store.mutate(cluster_pb2.Cluster, "", name, change)


async def test_cache_and_indexer(store: Store) -> None:
    await store.create(make_cluster("a", region="eu"))
    informer = Informer(store, cluster_pb2.Cluster)
    informer.add_indexer("region", lambda o: [o.metadata.labels.get("region", "")])
    async with running(informer):
        assert informer.keys() == ["a"]
        rec = Recorder()
        informer.add_handler(rec)
        await store.create(make_cluster("b", region="eu"))
        await store.create(make_cluster("c", region="us"))
        await rec.wait_for(2)
        assert [o.metadata.name for o in informer.by_index("region", "eu")] == ["a", "b"]
        await store.delete(cluster_pb2.Cluster, "", "a")
        await rec.wait_for(3)
        assert [o.metadata.name for o in informer.by_index("region", "eu")] == ["b"]
        assert informer.get("a") is None


async def test_every_change_once_in_order_across_etcd_restart(
    private_etcd: EmbeddedEtcd, private_store: Store
) -> None:
    informer = Informer(private_store, cluster_pb2.Cluster)
    rec = Recorder()
    informer.add_handler(rec)
    writer = await Store.connect(private_etcd.endpoint)
    expected: list[tuple[str, str, str]] = []
    try:
        async with running(informer):
            await writer.create(make_cluster("a"))
            expected.append(("ADDED", "a", ""))
            for n in range(1, 4):
                await bump(writer, "a", n)
                expected.append(("MODIFIED", "a", str(n)))
            await rec.wait_for(len(expected))

            private_etcd.stop()
            private_etcd.start()

            # Written while the informer's watch is still re-establishing itself.
            await writer.create(make_cluster("b"))
            expected.append(("ADDED", "b", ""))
            for n in range(4, 7):
                await bump(writer, "a", n)
                expected.append(("MODIFIED", "a", str(n)))
            await writer.delete(cluster_pb2.Cluster, "", "b")
            expected.append(("DELETED", "b", ""))
            await rec.wait_for(len(expected))
            # Give a replay, were there one, the chance to show itself.
            await bump(writer, "a", 99)
            expected.append(("MODIFIED", "a", "99"))
            await rec.wait_for(len(expected))
        assert rec.seen == expected
        assert informer.relists == 0
    finally:
        await writer.close()


async def test_relists_after_compaction(private_store: Store) -> None:
    store = private_store
    for name in ("keep", "change", "gone"):
        await store.create(make_cluster(name))
    informer = Informer(store, cluster_pb2.Cluster)
    rec = Recorder()
    async with running(informer):
        pass
    informer.add_handler(rec)
    # While the informer is not watching, history it has not seen is compacted away.
    await bump(store, "change", 1)
    await store.delete(cluster_pb2.Cluster, "", "gone")
    created = await store.create(make_cluster("new"))
    await store.client.compact(int(created.metadata.resource_version), physical=True)
    async with running(informer):
        await rec.wait_for(3)
        await bump(store, "keep", 5)
        await rec.wait_for(4)
    assert sorted(rec.seen[:3]) == [("ADDED", "new", ""), ("DELETED", "gone", ""), ("MODIFIED", "change", "1")]
    assert rec.seen[3] == ("MODIFIED", "keep", "5")
    assert informer.relists == 1
    assert sorted(informer.keys()) == ["change", "keep", "new"]


@pytest.mark.parametrize("namespace", ["team-a"])
async def test_namespaced_informer_keys(store: Store, namespace: str) -> None:
    from flotilla.api.v1 import core_pb2

    ev = core_pb2.Event(api_version="v1", kind="Event", reason="Test")
    ev.metadata.name = "e1"
    ev.metadata.namespace = namespace
    informer = Informer(store, core_pb2.Event, namespace=namespace)
    rec_keys: list[str] = []
    informer.add_handler(lambda kind, obj, old: rec_keys.append(f"{obj.metadata.namespace}/{obj.metadata.name}"))
    async with running(informer):
        await store.create(ev)
        async with asyncio.timeout(10):
            while not informer.keys():
                await asyncio.sleep(0.01)
        assert informer.keys() == [f"{namespace}/e1"]
