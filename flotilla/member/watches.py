"""Member objects by watch: one list+watch per kind in use per Ready member cluster, each
feeding a cache (docs/karmada-rules.md §11; Karmada watches its members through per-cluster
informers instead of polling them). The executor's work-status reconciler reads the objects its
Works carry; the status service reads every node and pod for a cluster's summaries.

A watch resumes from the last resourceVersion it saw (bookmarks keep that fresh), relists on
410 Gone, and backs off on errors. Every `resync` each cached object is reported as changed
again, from the cache, as client-go's informers resync: a reaction that failed or was lost is
made again, and nothing is listed (a relist of every member's every kind at once is a burst of
work for the members and for this process, and the watch already keeps the cache whole). Each
wait is jittered, between half and one and a half `resync` (as client-go's wait.Jitter spreads its
loops): a hundred members' watches start within seconds of each other, with their first Works,
and without the jitter all of their objects would be reported again within those seconds, every
`resync` (at ten thousand bindings, ten thousand Works to reconcile at once).

A cluster that is not Ready has no watches and no cache: its watches stop when it leaves Ready
and start again, from a fresh list, when a Work of it is next reconciled. Each cluster's watches
are tasks of their own, so a slow or hung member delays only its own Works.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flotilla.aio.clock import Clock
from flotilla.aio.tasks import cancel_and_wait
from flotilla.api import jsonbytes
from flotilla.api.clusters import cluster_ready
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.member.client import MemberClient
from flotilla.member.errors import MemberError, MemberLimitExceeded

log = logging.getLogger(__name__)

Connect = Callable[[cluster_pb2.Cluster], Awaitable[MemberClient]]
Kind = tuple[str, str]  # apiVersion, kind
ObjectKey = tuple[str, str]  # namespace, name
# (cluster, apiVersion, kind, the (namespace, name) of its objects that changed)
OnChange = Callable[[str, str, str, Iterable[ObjectKey]], None]

WATCH_TIMEOUT = 300  # seconds a watch request stays open before it is renewed
# A list of thousands of objects from a busy member takes far longer than a health probe (the
# client's own timeout): giving up at the probe timeout and listing again only adds load.
LIST_TIMEOUT = 60.0


@dataclass
class KindCache:
    """The member's objects of one kind, as last listed and watched.

    Each is kept as `keep` makes it, with its resourceVersion beside it. By default that is its
    JSON: as parsed dicts a member's objects cost several times their JSON, and the work-status
    reconciler reads only the few a Work carries. A reader of every object keeps only the fields it reads.
    """

    synced: bool = False
    objects: dict[ObjectKey, tuple[str, Any]] = field(default_factory=dict)
    lists: int = 0  # how many times the kind was listed: once, unless a watch could not resume
    keep: Callable[[dict[str, Any]], Any] = jsonbytes.dumps

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The object, decoded afresh (the caller may change it); for caches that keep JSON."""
        found = self.objects.get(key)
        return jsonbytes.loads(found[1]) if found is not None else None

    def values(self) -> list[Any]:
        """Every object, as kept."""
        return [kept for _, kept in self.objects.values()]

    def replace(self, items: Iterable[dict[str, Any]]) -> set[ObjectKey]:
        """Take a fresh list; return the keys whose object changed, came or went."""
        fresh = {_key(obj): self._entry(obj) for obj in items}
        changed = {k for k in fresh.keys() | self.objects.keys()
                   if _version(fresh.get(k)) != _version(self.objects.get(k))}
        self.objects, self.synced = fresh, True
        self.lists += 1
        return changed

    def apply(self, type_: str, obj: dict[str, Any]) -> ObjectKey:
        key = _key(obj)
        if type_ == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = self._entry(obj)
        return key

    def overflows(self, obj: dict[str, Any], limit: int) -> bool:
        """Whether keeping `obj` would take the cache past `limit` objects."""
        return len(self.objects) >= limit and _key(obj) not in self.objects

    def drop(self) -> None:
        """Forget every object: the cache is no longer synced, and readers wait for its next list
        (they never take an object missing from an unsynced cache for one gone from the member)."""
        self.objects, self.synced = {}, False

    def _entry(self, obj: dict[str, Any]) -> tuple[str, Any]:
        return str((obj.get("metadata") or {}).get("resourceVersion", "")), self.keep(obj)


def _key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace", ""), metadata.get("name", "")


def _version(entry: tuple[str, Any] | None) -> str | None:
    return None if entry is None else entry[0]


class ClusterWatch:
    """The watches of one cluster: a task and a cache per kind."""

    def __init__(self, owner: MemberWatches, cluster: cluster_pb2.Cluster) -> None:
        self.owner = owner
        self.cluster = cluster
        self.name = cluster.metadata.name
        self.caches: dict[Kind, KindCache] = {}
        self.tasks: dict[Kind, asyncio.Task[None]] = {}

    def ensure(self, kind: Kind) -> KindCache:
        cache = self.caches.get(kind)
        if cache is None:
            cache = self.caches[kind] = KindCache(keep=self.owner.keep.get(kind, jsonbytes.dumps))
            self.tasks[kind] = asyncio.create_task(self._run(kind, cache), name=f"member-watch/{self.name}/{kind[1]}")
        return cache

    async def stop(self) -> None:
        await cancel_and_wait(*self.tasks.values())

    async def _run(self, kind: Kind, cache: KindCache) -> None:
        owner, clock = self.owner, self.owner.clock
        api_version, kind_name = kind
        initial, ceiling = owner.backoff
        delay, version, resync_at = initial, "", 0.0
        while True:
            try:
                client = await owner.connect(self.cluster)
                if not version:
                    items, version = await client.list_versioned(api_version, kind_name, LIST_TIMEOUT)
                    changed = cache.replace(items)
                    resync_at = clock.monotonic() + owner.next_resync()
                    owner.on_change(self.name, api_version, kind_name, changed)
                    owner.on_synced(self.name, kind)
                elif clock.monotonic() >= resync_at:
                    resync_at = clock.monotonic() + owner.next_resync()
                    owner.on_change(self.name, api_version, kind_name, list(cache.objects))
                timeout = max(1, min(WATCH_TIMEOUT, int(resync_at - clock.monotonic()) + 1))
                async for event in client.watch(api_version, kind_name, version, timeout, LIST_TIMEOUT):
                    version = event.resource_version or version
                    delay = initial
                    if event.type == "BOOKMARK":
                        continue
                    if event.type != "DELETED" and cache.overflows(event.object, client.limits.list_items):
                        # A member that adds objects without end must not grow this process
                        # without end: the cache goes, and the kind is listed again, which
                        # succeeds once the member holds no more than the limit.
                        cache.drop()
                        version = ""
                        raise MemberLimitExceeded(client.server, f"watch {kind_name}", f"the cache would hold more "
                                                  f"than {client.limits.list_items} objects (Limits.list_items)",
                                                  client.limits.list_items)
                    owner.on_change(self.name, api_version, kind_name, [cache.apply(event.type, event.object)])
                continue
            except MemberError as e:
                if e.status == 410:
                    log.info("event=member-watch-expired cluster=%s kind=%s", self.name, kind_name)
                    version = ""
                    continue
                log.info("event=member-watch-failed cluster=%s kind=%s retry_in=%gs error=%s", self.name, kind_name,
                         delay, e)
            except Exception as e:  # a bug in one watch must not end the others
                log.warning("event=member-watch-error cluster=%s kind=%s retry_in=%gs error=%s: %s", self.name,
                            kind_name, delay, type(e).__name__, e)
            await clock.sleep(delay)
            delay = min(delay * 2, ceiling)


class MemberWatches:
    """Every served Ready cluster's watches, started on demand (`cache`) and stopped when the
    cluster leaves Ready, is deleted, or the manager stops (`run` ends)."""

    def __init__(self, clock: Clock, connect: Connect, serves: Callable[[cluster_pb2.Cluster], bool],
                 on_change: OnChange, on_synced: Callable[[str, Kind], None], *, resync: float = 300.0,
                 backoff: tuple[float, float] = (0.5, 30.0),
                 keep: dict[Kind, Callable[[dict[str, Any]], Any]] | None = None,
                 rng: random.Random | None = None) -> None:
        self.clock = clock
        self.connect = connect
        self.serves = serves
        self.on_change = on_change
        self.on_synced = on_synced
        self.resync = resync
        self._rng = rng or random.Random()
        self.backoff = backoff
        self.keep = keep or {}  # how a kind's objects are kept, when not as their JSON
        self._clusters: dict[str, ClusterWatch] = {}
        self._running = False
        self._stopping: set[asyncio.Task[None]] = set()

    def next_resync(self) -> float:
        """Seconds until a watch's next resync: `resync`, jittered by ±50%."""
        return self.resync * self._rng.uniform(0.5, 1.5)

    def watching(self, cluster: str) -> dict[Kind, KindCache]:
        """The kinds watched on `cluster` and their caches (none when it is not Ready)."""
        watch = self._clusters.get(cluster)
        return dict(watch.caches) if watch is not None else {}

    def cache(self, cluster: cluster_pb2.Cluster, kind: Kind) -> KindCache | None:
        """The cache of `kind` on `cluster`, its watch started if need be; None when the cluster
        gets no watches (not ours, not Ready, or not running)."""
        if not self._running or not self.serves(cluster) or not _ready(cluster):
            return None
        watch = self._clusters.get(cluster.metadata.name)
        if watch is None:
            watch = self._clusters[cluster.metadata.name] = ClusterWatch(self, cluster)
        return watch.ensure(kind)

    def on_cluster(self, event: WatchEvent[cluster_pb2.Cluster]) -> None:
        cluster = event.obj
        if event.type is EventType.DELETED or not _ready(cluster) or not self.serves(cluster):
            self._drop(cluster.metadata.name)
        elif (watch := self._clusters.get(cluster.metadata.name)) is not None:
            watch.cluster = cluster  # reconnects use the newest endpoint and credentials

    def forget(self, name: str) -> None:
        """Stop watching the cluster (this replica no longer serves it); a later read starts anew."""
        self._drop(name)

    def _drop(self, name: str) -> None:
        watch = self._clusters.pop(name, None)
        if watch is not None:
            log.info("event=member-watches-stopped cluster=%s kinds=%d", name, len(watch.tasks))
            task = asyncio.create_task(watch.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def run(self) -> None:
        """Until cancelled: while it runs, clusters get watches."""
        self._running = True
        try:
            await asyncio.Event().wait()
        finally:
            self._running = False
            watches, self._clusters = list(self._clusters.values()), {}
            await asyncio.gather(*(w.stop() for w in watches), *self._stopping, return_exceptions=True)


def _ready(cluster: cluster_pb2.Cluster) -> bool:
    return not cluster.metadata.HasField("deletion_timestamp") and cluster_ready(cluster)
