"""A compact informer (objects kept as their stored bytes) keeps the versions it used last decoded
too: a key read after its change is not decoded again, every read is still a copy of its own, and
a change hands its handlers the version it replaces, whether that was at hand or not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flotilla.api import registry
from flotilla.api.events import EventType
from flotilla.api.v1 import cluster_pb2
from flotilla.store import MemoryStore, informer
from flotilla.store.informer import Informer
from tests.background import in_background
from tests.factories import make_cluster

NAMES = [f"member{i}" for i in range(6)]


class Decodes:
    """Counts the decodes of stored bytes in the informer module."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = informer.decode_object

        def counted(*args: Any) -> Any:
            self.count += 1
            return real(*args)

        monkeypatch.setattr(informer, "decode_object", counted)


async def settled(watch: Informer[cluster_pb2.Cluster], store: MemoryStore) -> None:
    while watch.revision < store.revision:
        await asyncio.sleep(0.01)


async def test_a_key_read_after_its_change_is_not_decoded_again_and_reads_are_copies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    decodes = Decodes(monkeypatch)
    watch = Informer(store, registry.CLUSTER, compact=True)
    seen: list[tuple[EventType, str, str]] = []
    watch.add_handler(lambda kind, obj, old: seen.append(
        (kind, obj.spec.region, old.spec.region if old is not None else "-")))
    async with in_background(watch.run()):
        await watch.wait_synced()
        created = await store.create(make_cluster("member1"))
        await settled(watch, store)
        before = decodes.count
        first, second = watch.get("member1"), watch.get("member1")
        assert decodes.count == before, "a version just seen was decoded again"
        assert first == second == created and first is not second
        assert first is not None
        first.spec.region = "edited"
        assert watch.get("member1").spec.region == ""  # type: ignore[union-attr]

        created.spec.region = "eu"
        await store.update(created)
        await settled(watch, store)
        assert seen == [(EventType.ADDED, "", "-"), (EventType.MODIFIED, "eu", "")]


async def test_beyond_the_recent_versions_reads_and_changes_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(informer, "RECENT", 2)
    store = MemoryStore()
    watch = Informer(store, registry.CLUSTER, compact=True)
    olds: dict[str, str] = {}
    watch.add_handler(lambda kind, obj, old: olds.__setitem__(obj.metadata.name, old.spec.region if old else "-"))
    async with in_background(watch.run()):
        await watch.wait_synced()
        for name in NAMES:
            await store.create(make_cluster(name))
        await settled(watch, store)
        assert [watch.get(n).metadata.name for n in NAMES] == NAMES  # type: ignore[union-attr]
        for name in NAMES:
            current = watch.get(name)
            assert current is not None
            current.spec.region = f"{name}-region"
            await store.update(current)
        await settled(watch, store)
        assert olds == {name: "" for name in NAMES}
        assert {n: watch.get(n).spec.region for n in NAMES} == {n: f"{n}-region" for n in NAMES}  # type: ignore[union-attr]
        assert sorted(c.metadata.name for c in watch.list()) == NAMES
