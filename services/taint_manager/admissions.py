"""Mass-failure protection's admissions, written where every replica of the taint manager reads them.

The replicas divide the bindings among themselves (flotilla.runtime.sharing); admitting a
cluster stays one decision, taken at a fleet-wide rate (protection.py). The leader alone takes
it and writes it to `/flotilla/shards/taint_manager/admissions/<cluster>`, under the prefix only
the taint manager's own identity writes (flotilla.security.etcd_roles). A replica with a binding
due to leave a cluster that no record admits asks for it (it creates the record as Requested),
holds the eviction back, and looks again once the leader has written its answer.

A record admits only the failure it was written for: the cluster's uid and the NoExecute taints
in force when it was admitted. Once none of those is in force (the cluster recovered and failed
again, or one taint replaced another and the leader has yet to refresh the record), it admits
nothing until the leader decides again. A record that does not decode admits nothing either.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from flotilla.api.taints import EFFECT_NO_EXECUTE
from flotilla.api.v1 import cluster_pb2
from flotilla.store.base import KeyValue, StoreBase, WatchKind
from flotilla.store.errors import Compacted, StoreError
from flotilla.store.shards import SHARDS_PREFIX
from services.taint_manager.tolerations import current_taints

log = logging.getLogger(__name__)

PREFIX = f"{SHARDS_PREFIX}taint_manager/admissions/"
REQUESTED, ADMITTED, HELD = "Requested", "Admitted", "Held"
WAITING = "waiting for the taint manager's leader to admit the cluster"
# A record is a few hundred bytes; anything far larger was not written by a taint manager.
_MAX_RECORD = 64 * 1024

Taint = tuple[str, str, int]  # key, value, timeAdded in nanoseconds


def taints_in_force(cluster: cluster_pb2.Cluster) -> frozenset[Taint]:
    """The NoExecute taints in force on the cluster (a Ready cluster's stale readiness taints are not)."""
    return frozenset((t.key, t.value, t.time_added.ToNanoseconds())
                     for t in current_taints(cluster) if t.effect == EFFECT_NO_EXECUTE)


@dataclass(frozen=True)
class Record:
    state: str
    uid: str = ""
    taints: frozenset[Taint] = frozenset()
    reason: str = ""

    def encode(self) -> bytes:
        return json.dumps({"state": self.state, "uid": self.uid, "reason": self.reason,
                           "taints": sorted([list(t) for t in self.taints])}, sort_keys=True).encode()

    @staticmethod
    def decode(value: bytes) -> Record | None:
        """The record, or None for a value no taint manager wrote."""
        if len(value) > _MAX_RECORD:
            return None
        try:
            raw = json.loads(value)
            state, uid, reason = raw["state"], raw.get("uid", ""), raw.get("reason", "")
            taints = frozenset((str(k), str(v), int(at)) for k, v, at in raw.get("taints", []))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        if state not in (REQUESTED, ADMITTED, HELD) or not isinstance(uid, str) or not isinstance(reason, str):
            return None
        return Record(state, uid, taints, reason)


def admitted_record(cluster: cluster_pb2.Cluster) -> Record:
    return Record(ADMITTED, cluster.metadata.uid, taints_in_force(cluster))


def admits(record: Record | None, cluster: cluster_pb2.Cluster) -> bool:
    """Whether the record admits the cluster's current failure (see the module's docstring)."""
    return (record is not None and record.state == ADMITTED and record.uid == cluster.metadata.uid
            and not record.taints.isdisjoint(taints_in_force(cluster)))


@dataclass(frozen=True)
class Stored:
    """A record as etcd holds it: `record` None when its value does not decode."""

    record: Record | None
    mod_revision: int


class AdmissionRecords:
    """Every cluster's admission record, listed and then watched; the writes the replicas and
    the leader make to them, each a create or a compare-and-swap on the record's revision."""

    def __init__(self, store: StoreBase, retry_backoff: tuple[float, float] = (0.05, 2.0)) -> None:
        self.store = store
        self.synced = asyncio.Event()
        self._records: dict[str, Stored] = {}
        self._listeners: list[Callable[[str, Stored | None], None]] = []
        self._revision = 0
        self._backoff = retry_backoff

    def on_change(self, listener: Callable[[str, Stored | None], None]) -> Callable[[], None]:
        """`listener(cluster, stored)` after each change of a cluster's record (None: deleted),
        until the returned function is called."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def get(self, cluster: str) -> Stored | None:
        return self._records.get(cluster)

    def clusters(self) -> list[str]:
        return sorted(self._records)

    def admitted(self, clusters: Callable[[str], cluster_pb2.Cluster | None]) -> list[str]:
        """The clusters whose records admit their current failure (`clusters` looks each up)."""
        found = []
        for name, stored in sorted(self._records.items()):
            cluster = clusters(name)
            if cluster is not None and admits(stored.record, cluster):
                found.append(name)
        return found

    # -- writes ----------------------------------------------------------------

    async def request(self, cluster: str) -> None:
        """Ask the leader to decide on the cluster; nothing if a record is there already."""
        await self.store.kv_create(PREFIX + cluster, Record(REQUESTED).encode(), None)

    async def write(self, cluster: str, record: Record, existing: Stored | None) -> bool:
        """Put the record where `existing` is (None: where there is none); False if it moved."""
        if existing is None:
            return isinstance(await self.store.kv_create(PREFIX + cluster, record.encode(), None), int)
        return await self.store.kv_put_if(PREFIX + cluster, record.encode(), existing.mod_revision, None) is not None

    async def delete(self, cluster: str, existing: Stored) -> bool:
        return await self.store.kv_delete_if(PREFIX + cluster, existing.mod_revision)

    # -- the cache ---------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch, until cancelled; a broken watch resumes, a compacted one relists."""
        delay = self._backoff[0]
        need_list = not self.synced.is_set()
        while True:
            try:
                if need_list:
                    await self.relist()
                    need_list = False
                await self._watch()
            except Compacted:
                need_list = True
                continue
            except StoreError as e:
                log.info("event=watch-retry resource=admissions error=%s", e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])
                continue
            delay = self._backoff[0]

    async def relist(self) -> None:
        """Read every record again, telling the listeners what changed (`run` starts with it)."""
        found, revision = await self.store.kv_range(PREFIX)
        fresh = {kv.key.removeprefix(PREFIX): kv for kv in found}
        for cluster in [c for c in self._records if c not in fresh]:
            self._set(cluster, None)
        for cluster, kv in fresh.items():
            held = self._records.get(cluster)
            if held is None or held.mod_revision != kv.mod_revision:
                self._set(cluster, _stored(kv))
        self._revision = revision
        self.synced.set()

    async def _watch(self) -> None:
        async with contextlib.aclosing(self.store.watch(PREFIX, self._revision + 1)) as events:
            async for event in events:
                cluster = event.key.removeprefix(PREFIX)
                if event.kind == WatchKind.DELETE:
                    self._set(cluster, None)
                else:
                    self._set(cluster, _stored(KeyValue(event.key, event.value, event.revision)))
                self._revision = event.revision

    def _set(self, cluster: str, stored: Stored | None) -> None:
        if stored is None:
            self._records.pop(cluster, None)
        else:
            self._records[cluster] = stored
        for listener in self._listeners:
            listener(cluster, stored)


def _stored(kv: KeyValue) -> Stored:
    record = Record.decode(kv.value)
    if record is None:
        log.warning("event=undecodable resource=admissions key=%s", kv.key)
    return Stored(record, kv.mod_revision)
