"""A cluster's recent changes, kept so watches can start from a resourceVersion.

Every change to a cluster's objects bumps the cluster-wide resourceVersion by one and is
recorded here, serialized once (every watcher of the cluster sends the same bytes). Only the
last `capacity` or so are kept, like the API server's watch cache: a watch from a version
older than what is kept is answered 410 Gone, and the client relists.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass
from typing import Any

from flotilla.api import jsonbytes

DEFAULT_CAPACITY = 1000


@dataclass(frozen=True)
class Change:
    type: str  # ADDED | MODIFIED | DELETED
    resource_version: int
    group: str
    kind: str
    namespace: str
    labels: dict[str, str]
    data: bytes  # the object as JSON, as it was right after the change


class History:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._changes: list[Change] = []
        self._versions: list[int] = []
        # Every change after this version is kept.
        self.floor = 0
        self.head = 0
        self.wakes = 0  # how many times `wake()` was called, so a watcher busy writing misses none
        self._changed: asyncio.Future[None] | None = None

    def record(self, type_: str, obj: dict[str, Any], resource_version: int) -> None:
        metadata = obj.get("metadata") or {}
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        self._changes.append(Change(type_, resource_version, group, str(obj.get("kind", "")),
                                    metadata.get("namespace", ""), dict(metadata.get("labels") or {}),
                                    jsonbytes.dumps(obj)))
        self._versions.append(resource_version)
        self.head = resource_version
        # Trimmed in chunks, so recording stays O(1) amortized.
        if len(self._changes) > self.capacity + max(1, self.capacity // 4):
            drop = len(self._changes) - self.capacity
            self.floor = self._versions[drop - 1]
            del self._changes[:drop]
            del self._versions[:drop]
        self.wake()

    def since(self, resource_version: int) -> list[Change] | None:
        """The changes after `resource_version`, or None when some of them are no longer kept."""
        if resource_version < self.floor:
            return None
        return self._changes[bisect.bisect_right(self._versions, resource_version):]

    def wake(self) -> None:
        """Let every waiting watcher look again (a change, or a fault that concerns them)."""
        self.wakes += 1
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    async def changed(self, seen: int) -> None:
        """Returns once `wake()` was called more than `seen` times in all."""
        if self.wakes != seen:
            return
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._changed)
