"""aetcd hands etcd's answer to a watch request to whichever request is pending: a create request
left queued by an attempt that timed out while etcd was down is answered first once it is back,
and the next watch would silently get that watch's key. Flotilla's client names each watch's ID
and gives an answer only to the request that asked for it (real etcd; the stale request is queued
by hand, as the timed-out attempt left it)."""

from __future__ import annotations

import asyncio

import aetcd.utils
import pytest

from flotilla.store import Store
from flotilla.store.connect import watch

pytestmark = pytest.mark.integration


async def test_a_watch_answered_for_a_stale_request_is_refused_and_a_retry_is_right(store: Store) -> None:
    client = store.client
    watcher = client._watcher
    await watcher.setup()
    stale = 7_000_001
    await watcher._enqueue_watch_create(b"/stale/", range_end=aetcd.utils.prefix_range_end(b"/stale/"),
                                        watch_id=stale)
    # etcd answers the stale request first: that answer is cancelled, not given to this watch.
    mine = await watch(client, b"/mine/", prefix=True)
    await client.put(b"/stale/x", b"1")
    await client.put(b"/mine/y", b"2")

    async def first() -> bytes:
        async for event in mine:
            return bytes(event.kv.key)
        raise AssertionError("the watch ended")

    assert await asyncio.wait_for(first(), 10) == b"/mine/y"
    await mine.cancel()
