"""aetcd hands etcd's answer to a watch request to whichever request is pending: a create request
left queued by an attempt that timed out while etcd was down is answered first once it is back,
and the next watch would silently get that watch's key. `flotilla.store.connect.watch` refuses
such an answer (real etcd; the stale request is queued by hand, as the timed-out attempt left it)."""

from __future__ import annotations

import asyncio

import aetcd.utils
import pytest

from flotilla.store import Store
from flotilla.store.connect import CrossedWatch, watch

pytestmark = pytest.mark.integration


async def test_a_watch_answered_for_a_stale_request_is_refused_and_a_retry_is_right(store: Store) -> None:
    client = store.client
    watcher = client._watcher
    await watcher.setup()
    stale = 7_000_001
    await watcher._enqueue_watch_create(b"/stale/", range_end=aetcd.utils.prefix_range_end(b"/stale/"),
                                        watch_id=stale)
    with pytest.raises(CrossedWatch):
        await watch(client, b"/mine/", prefix=True)

    # Each refused request's own answer comes for the next one; they run out within a few retries.
    for _ in range(5):
        try:
            mine = await watch(client, b"/mine/", prefix=True)
            break
        except CrossedWatch:
            continue
    else:
        raise AssertionError("no watch of its own after 5 tries")
    await client.put(b"/stale/x", b"1")
    await client.put(b"/mine/y", b"2")

    async def first() -> bytes:
        async for event in mine:
            return bytes(event.kv.key)
        raise AssertionError("the watch ended")

    assert await asyncio.wait_for(first(), 10) == b"/mine/y"
    await mine.cancel()
