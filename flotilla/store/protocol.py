"""What reconcilers and informers need of a store, so either store will do.

`Store` (etcd) and `MemoryStore` both satisfy it; code that takes an
`ObjectStore` runs unchanged against a real etcd or in one process.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.store.base import KeyEvent, ListResult, ResourceRef

M = TypeVar("M", bound=Message)


class ObjectStore(Protocol):
    clock: Clock

    @staticmethod
    def decode(rt: registry.ResourceType[M], value: bytes, mod_revision: int, key: str = "") -> M: ...

    async def get(self, ref: ResourceRef[M], namespace: str, name: str) -> M: ...

    async def try_get(self, ref: ResourceRef[M], namespace: str, name: str) -> M | None: ...

    async def list(
        self,
        ref: ResourceRef[M],
        namespace: str | None = None,
        label_selector: dict[str, str] | None = None,
    ) -> ListResult[M]: ...

    async def create(self, obj: M, lease: int | None = None) -> M: ...

    async def update(self, obj: M, lease: int | None = None, original: M | None = None,
                     status_change: Callable[[M], object] | None = None) -> M: ...

    async def update_status(self, obj: M, original: M | None = None) -> M: ...

    async def delete(
        self,
        ref: ResourceRef[M],
        namespace: str,
        name: str,
        resource_version: str | None = None,
        change: Callable[[M], object] | None = None,
    ) -> M | None: ...

    async def mutate(
        self,
        ref: ResourceRef[M],
        namespace: str,
        name: str,
        change: Callable[[M], bool | None],
        status: bool = False,
        attempts: int = 50,
        status_change: Callable[[M], object] | None = None,
    ) -> M: ...

    async def grant_lease(self, ttl: int) -> int: ...

    async def revoke_lease(self, lease: int) -> None: ...

    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[KeyEvent, None]:
        """Changes under an etcd-style key prefix from start_revision on.

        Close it (contextlib.aclosing) when done. Raises Compacted when that
        history is gone and Unavailable when the stream breaks.
        """
        ...

    async def close(self) -> None: ...

