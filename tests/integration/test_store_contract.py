"""One contract, two stores: every case runs against a real etcd and against MemoryStore.

Whatever a reconciler or informer may rely on (CAS, finalizers, generation,
status vs spec, lists, leases, watches that resume and relist, corrupt values
that never stop an informer) is pinned here, so the in-memory store cannot
drift from the etcd one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import REGISTRY

from flotilla.api import codec, registry
from flotilla.api.events import EventType
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.store import AlreadyExists, Conflict, Informer, MemoryStore, NotFound, ObjectStore, Store, Undecodable
from flotilla.store.base import copy_of, payload
from flotilla.store.embedded import EmbeddedEtcd
from tests.factories import make_cluster

BACKENDS = ["etcd", "memory"]


@dataclass
class Backend:
    """A store plus what a test needs to do to it from outside the store API."""

    name: str
    store: ObjectStore
    put_raw: Callable[[str, bytes], Awaitable[None]]
    compact: Callable[[int], Awaitable[None]]
    # Break every open watch (etcd: restart it) and return once the store serves again.
    break_watches: Callable[[], Awaitable[None]]


def memory_backend() -> Backend:
    store = MemoryStore()

    async def put_raw(key: str, value: bytes) -> None:
        store.put_raw(key, value)

    async def compact(revision: int) -> None:
        store.compact(revision)

    async def break_watches() -> None:
        store.break_watches()

    return Backend("memory", store, put_raw, compact, break_watches)


def etcd_backend(store: Store, server: EmbeddedEtcd | None) -> Backend:
    async def put_raw(key: str, value: bytes) -> None:
        await store.client.put(key.encode(), value)

    async def compact(revision: int) -> None:
        await store.client.compact(revision, physical=True)

    async def break_watches() -> None:
        if server is None:
            raise RuntimeError("the shared etcd is not restarted; use the restartable backend")
        server.stop()
        server.start()

    return Backend("etcd", store, put_raw, compact, break_watches)


# Sync fixtures: an async one cannot pull the async etcd fixtures in by name.
@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        return memory_backend()
    store: Store = request.getfixturevalue("store")
    return etcd_backend(store, None)


@pytest.fixture(params=BACKENDS)
def private_backend(request: pytest.FixtureRequest) -> Backend:
    """A store of this test's own, which it may compact or restart."""
    if request.param == "memory":
        return memory_backend()
    server: EmbeddedEtcd = request.getfixturevalue("private_etcd")
    store: Store = request.getfixturevalue("private_store")
    return etcd_backend(store, server)


# -- objects: CAS, generation, status, finalizers, lists -------------------


async def test_create_get_and_create_twice_fails(backend: Backend) -> None:
    store = backend.store
    created = await store.create(make_cluster("member1"))
    assert created.metadata.uid
    assert created.metadata.generation == 1
    assert int(created.metadata.resource_version) > 0
    got = await store.get(cluster_pb2.Cluster, "", "member1")
    assert got == created
    assert await store.get(registry.CLUSTER, "", "member1") == created
    with pytest.raises(AlreadyExists) as refused:
        await store.create(make_cluster("member1"))
    # What is in the way comes with the refusal, at its resourceVersion.
    assert refused.value.current == created
    with pytest.raises(NotFound):
        await store.get(cluster_pb2.Cluster, "", "nope")
    assert await store.try_get(cluster_pb2.Cluster, "", "nope") is None


async def test_update_is_compare_and_swap(backend: Backend) -> None:
    store = backend.store
    first = await store.create(make_cluster("member1"))
    stale = cluster_pb2.Cluster()
    stale.CopyFrom(first)
    first.spec.region = "eu"
    updated = await store.update(first)
    assert int(updated.metadata.resource_version) > int(stale.metadata.resource_version)
    stale.spec.region = "us"
    with pytest.raises(Conflict):
        await store.update(stale)
    with pytest.raises(Conflict):
        await store.update_status(stale)
    assert (await store.get(cluster_pb2.Cluster, "", "member1")).spec.region == "eu"


async def test_update_of_a_missing_object(backend: Backend) -> None:
    store = backend.store
    obj = await store.create(make_cluster("member1"))
    await store.delete(cluster_pb2.Cluster, "", "member1")
    obj.spec.region = "eu"
    with pytest.raises(NotFound):
        await store.update(obj)


async def test_unchanged_update_writes_nothing(backend: Backend) -> None:
    store = backend.store
    created = await store.create(make_cluster("member1"))
    again = await store.update(created)
    assert again.metadata.resource_version == created.metadata.resource_version
    listed = await store.list(cluster_pb2.Cluster)
    assert listed.items[0].metadata.resource_version == created.metadata.resource_version


async def test_generation_follows_spec_not_metadata_or_status(backend: Backend) -> None:
    store = backend.store
    obj = await store.create(make_cluster("member1"))
    obj.metadata.labels["team"] = "a"
    obj = await store.update(obj)
    assert obj.metadata.generation == 1
    obj.status.kubernetes_version = "v1.30.0"
    obj = await store.update_status(obj)
    assert obj.metadata.generation == 1
    obj.spec.provider = "aws"
    obj = await store.update(obj)
    assert obj.metadata.generation == 2
    # Server-owned fields are not the client's to set.
    obj.metadata.generation = 10
    obj.metadata.uid = "forged"
    obj.metadata.annotations["x"] = "y"
    obj = await store.update(obj)
    assert obj.metadata.generation == 2
    assert obj.metadata.uid != "forged"


async def test_a_templates_generation_follows_its_content_other_than_status(backend: Backend) -> None:
    """What the executor's template predicates rely on to skip parsing a status write."""
    store = backend.store
    template = codec.from_dict({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 1}})
    obj = await store.create(template)
    assert obj.metadata.generation == 1

    def content(replicas: int, ready: int | None = None) -> bytes:
        value: dict[str, Any] = {"spec": {"replicas": replicas}}
        if ready is not None:
            value["status"] = {"readyReplicas": ready}
        return codec.raw_json(value)

    obj.content = content(1, ready=1)
    obj = await store.update_status(obj)
    assert obj.metadata.generation == 1
    obj.content = content(2, ready=1)
    obj = await store.update(obj)
    assert obj.metadata.generation == 2


async def test_status_and_spec_are_written_separately(backend: Backend) -> None:
    store = backend.store
    obj = await store.create(make_cluster("member1"))
    obj.status.kubernetes_version = "v1.30.0"
    obj.spec.provider = "gcp"
    obj = await store.update_status(obj)
    assert obj.status.kubernetes_version == "v1.30.0"
    assert obj.spec.provider == ""
    obj.status.kubernetes_version = "v0"
    obj.spec.provider = "gcp"
    obj = await store.update(obj)
    assert obj.status.kubernetes_version == "v1.30.0"
    assert obj.spec.provider == "gcp"
    assert await store.get(cluster_pb2.Cluster, "", "member1") == obj


async def test_finalizers_hold_deletion(backend: Backend) -> None:
    store = backend.store
    obj = make_cluster("member1")
    obj.metadata.finalizers.append("karmada.io/cluster-controller")
    await store.create(obj)
    marked = await store.delete(cluster_pb2.Cluster, "", "member1")
    assert marked is not None and marked.metadata.HasField("deletion_timestamp")
    assert await store.get(cluster_pb2.Cluster, "", "member1") == marked
    again = await store.delete(cluster_pb2.Cluster, "", "member1")
    assert again is not None
    assert again.metadata.deletion_timestamp == marked.metadata.deletion_timestamp
    assert again.metadata.resource_version == marked.metadata.resource_version
    again.metadata.ClearField("deletion_timestamp")
    again.metadata.labels["x"] = "y"
    kept = await store.update(again)
    assert kept.metadata.HasField("deletion_timestamp")
    del kept.metadata.finalizers[:]
    await store.update(kept)
    with pytest.raises(NotFound):
        await store.get(cluster_pb2.Cluster, "", "member1")


async def test_delete_without_finalizers_and_stale_version(backend: Backend) -> None:
    store = backend.store
    obj = await store.create(make_cluster("member1"))
    obj.spec.region = "eu"
    current = await store.update(obj)
    with pytest.raises(Conflict):
        await store.delete(cluster_pb2.Cluster, "", "member1", resource_version=obj.metadata.resource_version)
    with pytest.raises(Conflict):
        await store.delete(cluster_pb2.Cluster, "", "member1", resource_version="1")
    assert await store.delete(
        cluster_pb2.Cluster, "", "member1", resource_version=current.metadata.resource_version
    ) is None
    assert await store.try_get(cluster_pb2.Cluster, "", "member1") is None
    with pytest.raises(NotFound):
        await store.delete(cluster_pb2.Cluster, "", "member1")


async def test_delete_edits_the_object_in_the_write_that_marks_it(backend: Backend) -> None:
    store = backend.store
    obj = make_cluster("member1")
    obj.metadata.finalizers.append("flotilla.io/test")
    created = await store.create(obj)

    def mark(c: cluster_pb2.Cluster) -> None:
        c.metadata.annotations["purge"] = "directly"

    marked = await store.delete(cluster_pb2.Cluster, "", "member1", change=mark)
    assert marked is not None and marked.metadata.HasField("deletion_timestamp")
    got = await store.get(cluster_pb2.Cluster, "", "member1")
    assert got.metadata.annotations["purge"] == "directly"
    # One write: the mark and the edit share a revision, with nothing between.
    assert got.metadata.resource_version == marked.metadata.resource_version
    assert (await store.list(cluster_pb2.Cluster)).revision == int(created.metadata.resource_version) + 1
    # Already marked: an edit that changes something is written on its own, one that does not is not.
    again = await store.delete(cluster_pb2.Cluster, "", "member1", change=mark)
    assert again is not None and again.metadata.resource_version == marked.metadata.resource_version
    other = await store.delete(cluster_pb2.Cluster, "", "member1",
                               change=lambda c: c.metadata.annotations.update(trace="t1"))
    assert other is not None and int(other.metadata.resource_version) > int(marked.metadata.resource_version)
    assert (await store.get(cluster_pb2.Cluster, "", "member1")).metadata.annotations == {
        "purge": "directly", "trace": "t1"}
    # Without finalizers there is nothing to edit: the object is gone.
    await store.create(make_cluster("member2"))
    assert await store.delete(cluster_pb2.Cluster, "", "member2", change=mark) is None
    assert await store.try_get(cluster_pb2.Cluster, "", "member2") is None


async def test_list_with_label_selector_and_namespace_returns_revision(backend: Backend) -> None:
    store = backend.store
    await store.create(make_cluster("a", env="prod"))
    await store.create(make_cluster("b", env="dev"))
    last = await store.create(make_cluster("c", env="prod"))
    listed = await store.list(cluster_pb2.Cluster, label_selector={"env": "prod"})
    assert [o.metadata.name for o in listed.items] == ["a", "c"]
    assert listed.revision >= int(last.metadata.resource_version)
    assert listed.undecodable == []
    for ns in ("team-a", "team-ab"):
        await store.create(_binding(ns, "rb"))
    in_ns = await store.list(registry.RESOURCE_BINDING, "team-a")
    assert [(o.metadata.namespace, o.metadata.name) for o in in_ns.items] == [("team-a", "rb")]
    assert len((await store.list(registry.RESOURCE_BINDING)).items) == 2


async def test_concurrent_read_modify_write_loses_no_update(backend: Backend) -> None:
    store = backend.store
    await store.create(make_cluster("counter"))
    writers, increments = 8, 5

    def bump_count(obj: cluster_pb2.Cluster) -> None:
        obj.metadata.annotations["count"] = str(int(obj.metadata.annotations.get("count", "0")) + 1)

    async def writer() -> None:
        for _ in range(increments):
            await store.mutate(cluster_pb2.Cluster, "", "counter", bump_count)

    await asyncio.gather(*(writer() for _ in range(writers)))
    final = await store.get(cluster_pb2.Cluster, "", "counter")
    assert int(final.metadata.annotations["count"]) == writers * increments
    unchanged = await store.mutate(cluster_pb2.Cluster, "", "counter", lambda o: False)
    assert unchanged.metadata.resource_version == final.metadata.resource_version


async def test_objects_on_a_revoked_lease_go_with_it(backend: Backend, compact: bool) -> None:
    store = backend.store
    informer = Informer(store, cluster_pb2.Cluster, compact=compact)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        lease = await store.grant_lease(60)
        await store.create(make_cluster("leased"), lease=lease)
        await store.create(make_cluster("kept"))
        await rec.wait_for(2)
        await store.revoke_lease(lease)
        await rec.wait_for(3)
    assert rec.seen[2] == ("DELETED", "leased", "")
    assert await store.try_get(cluster_pb2.Cluster, "", "leased") is None
    assert await store.try_get(cluster_pb2.Cluster, "", "kept") is not None


# -- informers -------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self._changed = asyncio.Condition()

    async def __call__(self, kind: EventType, obj: cluster_pb2.Cluster | work_pb2.ResourceBinding,
                       old: object) -> None:
        self.seen.append((kind.value, obj.metadata.name, obj.metadata.annotations.get("n", "")))
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, count: int, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.seen) >= count)


@pytest.fixture(params=[False, True], ids=["decoded", "compact"])
def compact(request: pytest.FixtureRequest) -> bool:
    """Informers keeping decoded objects, and keeping bytes (the executor's)."""
    return bool(request.param)


@contextlib.asynccontextmanager
async def running(informer: Informer[Any]) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 10)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def bump(store: ObjectStore, name: str, n: int) -> None:
    def change(obj: cluster_pb2.Cluster) -> None:
        obj.metadata.annotations["n"] = str(n)

    await store.mutate(cluster_pb2.Cluster, "", name, change)


def _binding(namespace: str, name: str, n: str = "") -> work_pb2.ResourceBinding:
    rb = work_pb2.ResourceBinding(api_version=registry.BINDING_API, kind="ResourceBinding")
    rb.metadata.name = name
    rb.metadata.namespace = namespace
    if n:
        rb.metadata.annotations["n"] = n
    return rb


async def test_informer_cache_index_and_events(backend: Backend, compact: bool) -> None:
    store = backend.store
    await store.create(make_cluster("a", region="eu"))
    informer = Informer(store, registry.CLUSTER, compact=compact)
    informer.add_indexer("region", lambda o: [o.metadata.labels.get("region", "")])
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await rec.wait_for(1)
        await store.create(make_cluster("b", region="eu"))
        await store.create(make_cluster("c", region="us"))
        await bump(store, "c", 1)
        await store.delete(cluster_pb2.Cluster, "", "a")
        await rec.wait_for(5)
        assert [o.metadata.name for o in informer.by_index("region", "eu")] == ["b"]
        assert informer.index_keys("region", "us") == {"c"} and informer.index_keys("region", "asia") == set()
        assert informer.get("a") is None
        got = informer.get("c")
        assert got is not None and got.metadata.annotations["n"] == "1"
        assert sorted(o.metadata.name for o in informer.list()) == ["b", "c"]
    assert rec.seen == [
        ("ADDED", "a", ""), ("ADDED", "b", ""), ("ADDED", "c", ""), ("MODIFIED", "c", "1"), ("DELETED", "a", ""),
    ]


async def test_a_compact_informer_hands_out_copies_at_their_resource_version(backend: Backend) -> None:
    store = backend.store
    created = await store.create(make_cluster("a", region="eu"))
    informer = Informer(store, registry.CLUSTER, compact=True)
    async with running(informer):
        got = informer.get("a")
        assert got is not None and got.metadata.resource_version == created.metadata.resource_version
        got.metadata.labels["region"] = "edited"
        again = informer.get("a")
        assert again is not None and again.metadata.labels["region"] == "eu"
        # A handler's previous version is decoded from the bytes too.
        rec = Recorder()
        informer.add_handler(rec)
        await bump(store, "a", 1)
        await rec.wait_for(1)
        fresh = informer.get("a")
        assert fresh is not None and int(fresh.metadata.resource_version) > int(created.metadata.resource_version)


async def test_an_assumed_write_is_seen_at_once_and_its_echo_not_again(backend: Backend, compact: bool) -> None:
    store = backend.store
    created = await store.create(make_cluster("a", region="eu"))
    informer = Informer(store, registry.CLUSTER, compact=compact)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await rec.wait_for(1)
        mine = copy_of(created)
        mine.metadata.annotations["n"] = "1"
        written = await store.update(mine)
        await informer.assume(written)
        # Seen before the watch could bring it: the handler ran within `assume`.
        assert rec.seen[-1] == ("MODIFIED", "a", "1")
        got = informer.get("a")
        assert got is not None and got.metadata.resource_version == written.metadata.resource_version
        # An older version assumed late changes nothing.
        await informer.assume(created)
        assert informer.get("a").metadata.annotations["n"] == "1"  # type: ignore[union-attr]
        # Another writer's next version arrives by the watch, after the echo of the assumed one.
        await bump(store, "a", 2)
        await rec.wait_for(3)
    assert rec.seen == [("ADDED", "a", ""), ("MODIFIED", "a", "1"), ("MODIFIED", "a", "2")]


async def test_a_failing_handler_stops_nothing(backend: Backend, compact: bool) -> None:
    store = backend.store
    informer = Informer(store, cluster_pb2.Cluster, compact=compact)

    def broken(kind: EventType, obj: cluster_pb2.Cluster, old: cluster_pb2.Cluster | None) -> None:
        raise RuntimeError("handler bug")

    informer.add_handler(broken)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await store.create(make_cluster("a"))
        await store.create(make_cluster("b"))
        await rec.wait_for(2)
    assert [s[1] for s in rec.seen] == ["a", "b"]


async def test_namespaced_informer_keys(backend: Backend, compact: bool) -> None:
    store = backend.store
    informer = Informer(store, registry.RESOURCE_BINDING, namespace="team-a", compact=compact)
    async with running(informer):
        await store.create(_binding("team-ab", "other"))
        await store.create(_binding("team-a", "rb1"))
        async with asyncio.timeout(10):
            while not informer.keys():
                await asyncio.sleep(0.01)
        assert informer.keys() == ["team-a/rb1"]


async def test_informer_resumes_after_a_broken_watch_exactly_once(private_backend: Backend, compact: bool) -> None:
    store = private_backend.store
    informer = Informer(store, cluster_pb2.Cluster, retry_backoff=(0.02, 0.2), compact=compact)
    rec = Recorder()
    informer.add_handler(rec)
    expected: list[tuple[str, str, str]] = []
    async with running(informer):
        await store.create(make_cluster("a"))
        expected.append(("ADDED", "a", ""))
        for n in range(1, 3):
            await bump(store, "a", n)
            expected.append(("MODIFIED", "a", str(n)))
        await rec.wait_for(len(expected))

        await private_backend.break_watches()

        # Written while the watch is re-establishing itself.
        await store.create(make_cluster("b"))
        expected.append(("ADDED", "b", ""))
        await bump(store, "a", 3)
        expected.append(("MODIFIED", "a", "3"))
        await store.delete(cluster_pb2.Cluster, "", "b")
        expected.append(("DELETED", "b", ""))
        await rec.wait_for(len(expected))
        await bump(store, "a", 99)
        expected.append(("MODIFIED", "a", "99"))
        await rec.wait_for(len(expected))
    assert rec.seen == expected
    assert informer.relists == 0


async def test_informer_relists_after_compaction(private_backend: Backend, compact: bool) -> None:
    store = private_backend.store
    for name in ("keep", "change", "gone"):
        await store.create(make_cluster(name))
    informer = Informer(store, cluster_pb2.Cluster, compact=compact)
    rec = Recorder()
    async with running(informer):
        pass
    informer.add_handler(rec)
    # While the informer is not watching, history it has not seen is compacted away.
    await bump(store, "change", 1)
    await store.delete(cluster_pb2.Cluster, "", "gone")
    created = await store.create(make_cluster("new"))
    await private_backend.compact(int(created.metadata.resource_version))
    async with running(informer):
        await rec.wait_for(3)
        await bump(store, "keep", 5)
        await rec.wait_for(4)
    assert sorted(rec.seen[:3]) == [("ADDED", "new", ""), ("DELETED", "gone", ""), ("MODIFIED", "change", "1")]
    assert rec.seen[3] == ("MODIFIED", "keep", "5")
    assert informer.relists == 1
    assert sorted(informer.keys()) == ["change", "keep", "new"]


# -- corrupt values ------------------------------------------------------

GARBAGE = b"\xff\xfe not a protobuf \x00\x01"
BAD_KEY = "/flotilla/resourcebindings/default/bad"


def undecodable_count(resource: str = "resourcebindings") -> float:
    return REGISTRY.get_sample_value("flotilla_store_undecodable_objects_total", {"resource": resource}) or 0.0


async def test_corrupt_value_get_list_and_delete(backend: Backend) -> None:
    store = backend.store
    await store.create(_binding("default", "a"))
    await backend.put_raw(BAD_KEY, GARBAGE)
    await store.create(_binding("default", "z"))
    with pytest.raises(Undecodable) as raised:
        await store.get(registry.RESOURCE_BINDING, "default", "bad")
    assert "ResourceBinding" in str(raised.value) and BAD_KEY in str(raised.value)
    assert raised.value.key == BAD_KEY
    listed = await store.list(registry.RESOURCE_BINDING, "default")
    assert [o.metadata.name for o in listed.items] == ["a", "z"]
    assert listed.undecodable == [BAD_KEY]
    # Garbage that protobuf happens to accept (an empty message) is no object either.
    await backend.put_raw("/flotilla/resourcebindings/default/empty", b"")
    assert (await store.list(registry.RESOURCE_BINDING)).undecodable == [
        BAD_KEY, "/flotilla/resourcebindings/default/empty",
    ]
    # A corrupt object can still be deleted, just not at a resourceVersion.
    with pytest.raises(Undecodable):
        await store.delete(registry.RESOURCE_BINDING, "default", "bad", resource_version="5")
    assert await store.delete(registry.RESOURCE_BINDING, "default", "bad") is None
    assert await store.delete(registry.RESOURCE_BINDING, "default", "empty") is None
    assert (await store.list(registry.RESOURCE_BINDING)).undecodable == []


async def test_informer_keeps_the_last_good_version_of_a_corrupt_key(backend: Backend, compact: bool) -> None:
    """Garbage under a key is reported each time it is written, and is never a deletion: the
    cache keeps the last good version, handlers hear nothing, and a key never seen readable is
    unknown (`get` raises), not absent. A later good value and an explicit delete are reported."""
    store = backend.store
    await store.create(_binding("default", "a"))
    await backend.put_raw(BAD_KEY, GARBAGE)  # before the list
    await store.create(_binding("default", "c"))
    reported: list[tuple[str, str]] = []

    async def on_undecodable(key: str, error: str) -> None:
        reported.append((key, error))

    before = undecodable_count()
    informer = Informer(store, registry.RESOURCE_BINDING, on_undecodable=on_undecodable, compact=compact)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await rec.wait_for(2)
        assert sorted(informer.keys()) == ["default/a", "default/c"]
        assert len(reported) == 1 and reported[0][0] == BAD_KEY and "ResourceBinding" in reported[0][1]
        # Listed as garbage: stored, but unknown, so no caller may read it as gone.
        with pytest.raises(Undecodable) as unknown:
            informer.get("default/bad")
        assert unknown.value.key == BAD_KEY
        assert informer.unknown() == ["default/bad"]
        with pytest.raises(Undecodable):
            informer.check_complete()
        assert informer.get("default/none") is None

        # Deleted, then a good object under the key.
        await store.delete(registry.RESOURCE_BINDING, "default", "bad")
        good = await store.create(_binding("default", "bad", n="good"))
        await rec.wait_for(3)
        assert informer.unknown() == [] and informer.unreadable() == {}
        informer.check_complete()

        # Garbage over it mid-watch: handlers hear nothing, the last good version stays.
        await backend.put_raw(BAD_KEY, GARBAGE + b"again")
        await store.create(_binding("default", "d", n="after"))
        await rec.wait_for(4)
        assert rec.seen[2:] == [("ADDED", "bad", "good"), ("ADDED", "d", "after")]
        assert informer.get("default/bad") == good
        assert sorted(o.metadata.name for o in informer.list()) == ["a", "bad", "c", "d"]
        assert informer.unreadable() == {"default/bad": BAD_KEY}
        assert informer.unknown() == []
        informer.check_complete()

        # A later good value resumes it: MODIFIED, from the last good version.
        await backend.put_raw(BAD_KEY, payload(_binding("default", "bad", n="fixed")))
        await rec.wait_for(5)
        assert rec.seen[4] == ("MODIFIED", "bad", "fixed")
        assert informer.unreadable() == {}

        # Garbage again is reported again; other objects keep flowing; a delete is a delete.
        await backend.put_raw(BAD_KEY, GARBAGE)
        await bump_binding(store, "a", "1")
        await rec.wait_for(6)
        assert rec.seen[5] == ("MODIFIED", "a", "1")
        kept = informer.get("default/bad")
        assert kept is not None and kept.metadata.annotations["n"] == "fixed"
        await store.delete(registry.RESOURCE_BINDING, "default", "bad")
        await rec.wait_for(7)
        assert rec.seen[6] == ("DELETED", "bad", "fixed")
        assert informer.get("default/bad") is None
        assert informer.unreadable() == {}
    assert [k for k, _ in reported] == [BAD_KEY] * 3
    assert undecodable_count() - before == 3
    assert sorted(informer.keys()) == ["default/a", "default/c", "default/d"]


async def test_relist_keeps_a_corrupt_key_at_its_last_good_version(private_backend: Backend, compact: bool) -> None:
    """A relist (after compaction) that finds garbage under a cached key reports it once and keeps
    the cached version; one that finds the key deleted reports the deletion."""
    store = private_backend.store
    good = await store.create(_binding("default", "bad", n="good"))
    reported: list[str] = []
    informer = Informer(store, registry.RESOURCE_BINDING,
                        on_undecodable=lambda key, error: reported.append(key), compact=compact)
    rec = Recorder()
    async with running(informer):
        pass
    informer.add_handler(rec)
    await private_backend.put_raw(BAD_KEY, GARBAGE)
    created = await store.create(_binding("default", "new"))
    await private_backend.compact(int(created.metadata.resource_version))
    async with running(informer):
        await rec.wait_for(1)
        assert informer.relists == 1
        assert informer.get("default/bad") == good
        assert informer.unreadable() == {"default/bad": BAD_KEY}
    assert rec.seen == [("ADDED", "new", "")]
    assert reported == [BAD_KEY]

    await store.delete(registry.RESOURCE_BINDING, "default", "bad")
    created = await store.create(_binding("default", "newer"))
    await private_backend.compact(int(created.metadata.resource_version))
    async with running(informer):
        await rec.wait_for(3)
    assert sorted(rec.seen[1:]) == [("ADDED", "newer", ""), ("DELETED", "bad", "good")]
    assert informer.get("default/bad") is None and informer.unreadable() == {}
    assert reported == [BAD_KEY]
    assert informer.relists == 2


async def bump_binding(store: ObjectStore, name: str, n: str) -> None:
    def change(obj: work_pb2.ResourceBinding) -> None:
        obj.metadata.annotations["n"] = n

    await store.mutate(registry.RESOURCE_BINDING, "default", name, change)
