"""A MemoryStore that gives the event loop a turn on every read and write.

MemoryStore's operations never suspend, so a reconciler's workers can drain a whole queue in
one turn of the loop; against etcd every read and write is a round trip that lets other tasks
run. Tests that must act in the middle of a storm (kill a controller part-way) use this one.
"""

from __future__ import annotations

import asyncio
import builtins

from flotilla.store import MemoryStore
from flotilla.store.base import KeyValue


class RoundTripStore(MemoryStore):
    async def _kv_get(self, key: str) -> KeyValue | None:
        await asyncio.sleep(0)
        return await super()._kv_get(key)

    async def _kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        await asyncio.sleep(0)
        return await super()._kv_range(prefix)

    async def _kv_create(self, key: str, value: bytes, lease: int | None) -> int | None:
        await asyncio.sleep(0)
        return await super()._kv_create(key, value, lease)

    async def _kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        await asyncio.sleep(0)
        return await super()._kv_put_if(key, value, mod_revision, lease)

    async def _kv_delete_if(self, key: str, mod_revision: int) -> bool:
        await asyncio.sleep(0)
        return await super()._kv_delete_if(key, mod_revision)
