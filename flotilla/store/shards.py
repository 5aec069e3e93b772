"""Work shared across the replicas of a service: membership on a lease, one claim per shard.

Leader election makes one replica do all of a service's work; this divides it. Each replica holds
`/flotilla/shards/<service>/members/<identity>` on its own lease, so the live members are what
etcd holds under that prefix. Which replica should own a shard (for the executor, a member
cluster) is `owner_of`: rendezvous hashing over the live members, so a replica joining or leaving
moves only the shards it takes or gives up, and every replica that sees the same members agrees.

Agreement is not what keeps two replicas off one shard: views of the members lag. A replica acts
on a shard only while it holds `/flotilla/shards/<service>/claims/<shard>`, on the same lease —
the fence. A claim is only ever created where there is none, so at most one replica holds it; a
replica gives a shard up by stopping its work on it first (`on_release` returns when nothing of
it is in flight) and deleting its claim after (a compare-and-swap on the claim's revision), and
only then can the next owner create it. A replica that dies loses every claim with its lease,
within one lease period; one that cannot refresh its lease stops acting on all its shards before
etcd could expire the lease (`KeptLease.valid` runs out early), so a new owner never starts
while it still acts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import Gauge

from flotilla.aio.clock import Clock
from flotilla.aio.tasks import bounded, cancel_and_wait
from flotilla.store.base import KeyValue, StoreBase
from flotilla.store.errors import StoreError
from flotilla.store.lease import STORE_ERRORS, KeptLease

log = logging.getLogger(__name__)

SHARDS_PREFIX = "/flotilla/shards/"
T = TypeVar("T")

SHARDS_HELD = Gauge("flotilla_shards_held", "shards this replica holds a claim on and acts on", ["name"])


def members_prefix(service: str) -> str:
    return f"{SHARDS_PREFIX}{service}/members/"


def claims_prefix(service: str) -> str:
    return f"{SHARDS_PREFIX}{service}/claims/"


def bucket_of(key: str, buckets: int) -> str:
    """The bucket of a key, for work divided by key rather than by member cluster (a binding's
    controllers): a fixed number of shards, so the claims stay few however many keys there are."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return bucket_name(int.from_bytes(digest, "big") % buckets)


def bucket_name(i: int) -> str:
    return f"bucket-{i:03d}"


def owner_of(shard: str, members: Iterable[str]) -> str | None:
    """The member with the highest hash of (member, shard): rendezvous hashing. Removing a member
    moves only its own shards; adding one takes only the shards it now wins. None without members."""
    best: tuple[bytes, str] | None = None
    for member in members:
        score = hashlib.blake2b(f"{member}\x00{shard}".encode(), digest_size=8).digest()
        if best is None or (score, member) > best:
            best = (score, member)
    return best[1] if best is not None else None


async def held_shards(store: StoreBase, service: str) -> dict[str, list[str]] | None:
    """Each replica's shards by its identity, as etcd holds the claims; None when the service
    shares no work (no member has ever joined)."""
    claims, _ = await store.kv_range(claims_prefix(service))
    members, _ = await store.kv_range(members_prefix(service))
    if not claims and not members:
        return None
    held: dict[str, list[str]] = {}
    for claim in claims:
        held.setdefault(claim.value.decode(errors="replace"), []).append(claim.key.rsplit("/", 1)[1])
    return {holder: sorted(shards) for holder, shards in held.items()}


@dataclass
class _Claim:
    revision: int


class ShardCoordinator:
    """Claims the shards `owner_of` gives this replica among the live members, and gives up the
    others. `on_acquire(shard)` runs once a claim is held (start acting); `on_release(shard)` runs
    before a claim is deleted and must return only when nothing of that shard is in flight.

    Rebalancing runs on every change under the service's prefix (a member or a claim came or
    went), on `poke()` (the set of shards changed), and every third of the lease period."""

    def __init__(self, store: StoreBase, clock: Clock, service: str, identity: str, ttl: int,
                 shards: Callable[[], Iterable[str]],
                 on_acquire: Callable[[str], Awaitable[None]],
                 on_release: Callable[[str], Awaitable[None]],
                 backoff: tuple[float, float] = (0.2, 2.0),
                 report: Callable[[str | None], Awaitable[None]] | None = None) -> None:
        """`report(reason)` is told why this replica holds no share while it cannot (a lost
        lease, an unreachable store), and None once it has joined again: its health says so."""
        self.store = store
        self.service = service
        self.identity = identity
        self.clock = clock
        self.lease = KeptLease(store, clock, ttl)
        self._shards = shards
        self._on_acquire = on_acquire
        self._on_release = on_release
        self._held: dict[str, _Claim] = {}
        self._wake = asyncio.Event()
        self._backoff = backoff
        self._gauge = SHARDS_HELD.labels(service)
        self._report = report

    def owns(self, shard: str) -> bool:
        """Whether this replica may act on the shard now: it holds the claim on a lease still valid."""
        return shard in self._held and self.lease.valid()

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def poke(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Until cancelled; store errors are retried with backoff. On the way out the claims are
        let go (every shard released first), so the others take them over at once."""
        delay = self._backoff[0]
        try:
            while True:
                try:
                    await self._term()
                    delay = self._backoff[0]
                except STORE_ERRORS as e:
                    log.warning("event=shards-retry service=%s identity=%s retry_in=%gs error=%s: %s",
                                self.service, self.identity, delay, type(e).__name__, e)
                    await self._tell(f"holds no shards: the store failed ({type(e).__name__}: {e}); "
                                     f"joining again in {delay:g}s")
                    # Stop acting, and end the lease (best effort) so no claim outlives this term.
                    await self._drop_all()
                    await self.lease.revoke()
                    await self.clock.sleep(delay)
                    delay = min(delay * 2, self._backoff[1])
        finally:
            await self._drop_all()
            await self.lease.revoke()

    async def _term(self) -> None:
        """One lease: join, then rebalance on every change until the lease is lost."""
        await self.lease.grant()
        await self._join()
        log.info("event=shards-joined service=%s identity=%s", self.service, self.identity)
        await self._tell(None)
        watcher = asyncio.create_task(self._watch())
        lost = asyncio.create_task(self.lease.lost.wait())
        try:
            while not self.lease.lost.is_set():
                self._wake.clear()
                await self._rebalance()
                waker = asyncio.create_task(self._wake.wait())
                tick = asyncio.create_task(self.clock.sleep(max(self.lease.ttl / 3, 0.2)))
                await asyncio.wait({waker, tick, lost, watcher}, return_when=asyncio.FIRST_COMPLETED)
                await cancel_and_wait(waker, tick)
                if watcher.done():
                    watcher.result()  # a broken watch ends the term: raise its error
                    watcher = asyncio.create_task(self._watch())
        finally:
            await cancel_and_wait(watcher, lost)
        log.warning("event=shards-lease-lost service=%s identity=%s", self.service, self.identity)
        await self._tell("holds no shards: their lease was lost; joining again")
        await self._drop_all()
        await self.lease.revoke()

    async def _watch(self) -> None:
        _, revision = await self._bounded(self.store.kv_range(f"{SHARDS_PREFIX}{self.service}/"))
        async with contextlib.aclosing(self.store.watch(f"{SHARDS_PREFIX}{self.service}/", revision + 1)) as events:
            async for _ in events:
                self._wake.set()

    async def _rebalance(self) -> None:
        members_kv, _ = await self._bounded(self.store.kv_range(members_prefix(self.service)))
        members = sorted(kv.key.removeprefix(members_prefix(self.service)) for kv in members_kv)
        if self.identity not in members:
            # Our member key is gone though the lease lives (deleted by hand, a restore): join
            # again, or no replica would count this one and its share would be nobody's.
            await self._join()
            log.warning("event=shards-rejoined service=%s identity=%s reason=member-key-gone",
                        self.service, self.identity)
            members = sorted([*members, self.identity])
        claims_kv, _ = await self._bounded(self.store.kv_range(claims_prefix(self.service)))
        claims = {kv.key.removeprefix(claims_prefix(self.service)): kv for kv in claims_kv}
        shards = sorted(set(self._shards()))
        wanted = {s for s in shards if owner_of(s, members) == self.identity}
        # A claim of ours that etcd no longer holds (deleted by hand, or an old lease's) is not ours.
        for shard in [s for s, c in self._held.items()
                      if s not in claims or claims[s].mod_revision != c.revision]:
            await self._release(shard, delete=False)
        for shard in sorted(set(self._held) - wanted):
            await self._release(shard, delete=True)
        # Ours in etcd but not held here (a delete that failed after its release): let it go.
        mine = self.identity.encode()
        for shard, kv in claims.items():
            if kv.value == mine and shard not in self._held and shard not in wanted:
                await self._bounded(self.store.kv_delete_if(kv.key, kv.mod_revision))
        for shard in sorted(wanted - set(self._held)):
            if not self.lease.valid():
                break
            await self._acquire(shard, claims.get(shard))
        self._gauge.set(len(self._held))

    async def _join(self) -> None:
        """Put this replica's member key on its lease."""
        if await self._put_own(self._member_key(), None) is None:
            raise StoreError(f"{self._member_key()} is held by another replica with this identity")

    async def _acquire(self, shard: str, existing: KeyValue | None) -> bool:
        if existing is not None and existing.value != self.identity.encode():
            return False  # another replica holds it: its release (or its lease's end) wakes us
        revision = await self._put_own(self._claim_key(shard), existing)
        if revision is None:
            return False
        self._held[shard] = _Claim(revision)
        log.info("event=shard-acquired service=%s shard=%s identity=%s", self.service, shard, self.identity)
        await self._on_acquire(shard)
        return True

    async def _put_own(self, key: str, existing: KeyValue | None) -> int | None:
        """Create the key on this replica's lease; one left by an earlier lease of this same
        replica (its value is our identity) is taken over. The write's revision, or None."""
        lease = self.lease.id
        assert lease is not None
        mine = self.identity.encode()
        if existing is None:
            created = await self._bounded(self.store.kv_create(key, mine, lease))
            if isinstance(created, int):
                return created
            existing = created if created is not None else await self._bounded(self.store.kv_get(key))
            if existing is None or existing.value != mine:
                return None
        return await self._bounded(self.store.kv_put_if(key, mine, existing.mod_revision, lease))

    async def _release(self, shard: str, delete: bool) -> None:
        claim = self._held.pop(shard)
        # Stop first: nothing of the shard may still be in flight when the next owner starts.
        await self._on_release(shard)
        if delete:
            await self._bounded(self.store.kv_delete_if(self._claim_key(shard), claim.revision))
        log.info("event=shard-released service=%s shard=%s identity=%s", self.service, shard, self.identity)

    async def _drop_all(self) -> None:
        """Stop acting on every shard (the lease is gone or going: its claims go with it)."""
        for shard in sorted(self._held):
            self._held.pop(shard)
            # Bounded: on the way out the workers that would finish what is in flight may be gone.
            with contextlib.suppress(Exception):
                await bounded(self._on_release(shard), self.lease.ttl)
        self._gauge.set(0)

    async def _tell(self, reason: str | None) -> None:
        if self._report is not None:
            await self._report(reason)

    async def _bounded(self, awaitable: Awaitable[T]) -> T:
        return await bounded(awaitable, max(float(self.lease.ttl), 1.0))

    def _member_key(self) -> str:
        return f"{members_prefix(self.service)}{self.identity}"

    def _claim_key(self, shard: str) -> str:
        return f"{claims_prefix(self.service)}{shard}"
