"""A reader that falls behind its watch does not make the process hold what it has not read: past
a backlog the watch is cut between two revisions and the store's watch carries on from the cut on
a new one, every event once and in order (real etcd)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from flotilla.store import Store
from flotilla.store.base import KeyEvent, WatchKind
from flotilla.store.connect import WatchBehind, watch
from flotilla.store.objects import WATCHES_RESUMED

pytestmark = pytest.mark.integration

PREFIX = "/flotilla/test-backlog/"


async def until(predicate: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def _put_all(store: Store, count: int, start: int = 0) -> list[int]:
    revisions = []
    for i in range(start, start + count):
        response = await store.client.put(f"{PREFIX}k{i:03d}".encode(), str(i).encode())
        revisions.append(int(response.header.revision))
    return revisions


async def test_a_watch_holds_its_backlog_and_is_cut_before_the_next_revision(store: Store) -> None:
    bounded = await watch(store.client, PREFIX.encode(), prefix=True, backlog=5)
    try:
        revisions = await _put_all(store, 12)
        await until(lambda: bounded.cut_at is not None, timeout=30)
        # The first five events stay; the sixth and everything after are left in etcd.
        assert bounded.cut_at == revisions[5]
        got = []
        with pytest.raises(WatchBehind) as behind:
            async for event in bounded:
                got.append(int(event.kv.mod_revision))
        assert got == revisions[:5]
        assert behind.value.resume == revisions[5]
    finally:
        await bounded.cancel()


async def test_a_reader_behind_gets_every_event_once_in_order_across_cuts(store: Store) -> None:
    start = int((await store.client.put(f"{PREFIX}first".encode(), b"0")).header.revision)
    await _put_all(store, 20)
    # One transaction of eight keys: one revision, longer than the backlog; it is never split.
    ops = [store.client.transactions.put(f"{PREFIX}t{i}".encode(), b"t") for i in range(8)]
    await store.client.transaction(compare=[], success=ops, failure=[])
    await _put_all(store, 10, start=20)
    await store.client.delete(f"{PREFIX}k000".encode())
    expected = ["first", *(f"k{i:03d}" for i in range(20)), *(f"t{i}" for i in range(8)),
                *(f"k{i:03d}" for i in range(20, 30)), "k000"]

    small = Store(store.client, watch_backlog=5)
    resumed_before = WATCHES_RESUMED.labels(prefix=PREFIX)._value.get()
    events: list[KeyEvent] = []

    async def read() -> None:
        # Every event is already in etcd's history: they arrive far faster than this reader,
        # which takes its time over each.
        async for event in small.watch(PREFIX, start):
            events.append(event)
            await asyncio.sleep(0)
            if len(events) == len(expected):
                return

    await asyncio.wait_for(read(), 60)
    assert [e.key[len(PREFIX):] for e in events] == expected
    assert [e.kind for e in events][-1] is WatchKind.DELETE
    revisions = [e.revision for e in events]
    assert revisions == sorted(revisions)
    assert len({e.revision for e in events if e.key[len(PREFIX):].startswith("t")}) == 1
    assert WATCHES_RESUMED.labels(prefix=PREFIX)._value.get() > resumed_before
