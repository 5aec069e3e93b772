"""An informer's assumed writes against a relist that read the store before them: the relist
neither takes the object back to its older version nor reports an assumed create deleted."""

from __future__ import annotations

import asyncio

from flotilla.api.events import EventType
from flotilla.api.v1 import cluster_pb2
from flotilla.store.base import KeyValue, copy_of
from flotilla.store.informer import Informer
from flotilla.store.memory import MemoryStore
from tests.factories import make_cluster


class HeldList(MemoryStore):
    """A memory store whose range reads, once armed, wait after reading until released."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.read = asyncio.Event()
        self.release = asyncio.Event()

    async def kv_range(self, prefix: str) -> tuple[list[KeyValue], int]:
        result = await super().kv_range(prefix)
        if self.armed:
            self.read.set()
            await self.release.wait()
        return result


async def test_a_relist_read_before_assumed_writes_keeps_them() -> None:
    store = HeldList()
    old = await store.create(make_cluster("a"))
    informer = Informer(store, cluster_pb2.Cluster)
    seen: list[tuple[str, str, str]] = []
    informer.add_handler(lambda kind, obj, _: seen.append((kind.value, obj.metadata.name,
                                                           obj.metadata.annotations.get("n", ""))))
    await informer._relist()
    store.armed = True
    relist = asyncio.create_task(informer._relist())
    await store.read.wait()
    # Written and assumed after the relist's read, before it is applied.
    changed = copy_of(old)
    changed.metadata.annotations["n"] = "1"
    await informer.assume(await store.update(changed))
    await informer.assume(await store.create(make_cluster("b")))
    store.release.set()
    await relist
    a, b = informer.get("a"), informer.get("b")
    assert a is not None and a.metadata.annotations["n"] == "1"
    assert b is not None
    assert seen == [("ADDED", "a", ""), ("MODIFIED", "a", "1"), ("ADDED", "b", "")]
    assert EventType.DELETED.value not in {kind for kind, _, _ in seen}
