"""Mass-failure protection shared across the taint manager's replicas (admissions.py,
cluster_admission.py): which records admit which failure (a table), what a stored value that is
no record means, and the leader's answers to requests, on a MemoryStore."""

from __future__ import annotations

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.store import MemoryStore, Undecodable
from services.taint_manager.admissions import (
    ADMITTED,
    HELD,
    PREFIX,
    REQUESTED,
    AdmissionRecords,
    Record,
    admits,
    admitted_record,
)
from services.taint_manager.cluster_admission import ClusterAdmissionReconciler
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.unit.test_taint_manager_rules import cluster

NOT_READY, UNREACHABLE, USER = "cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable", "maintenance"


def failed(name: str = "member1", uid: str = "u1", taints: tuple[tuple[str, int], ...] = ((NOT_READY, 100),),
           ready: str = "False") -> cluster_pb2.Cluster:
    c = cluster(name, ready)
    c.metadata.uid = uid
    for key, added in taints:
        c.spec.taints.add(key=key, effect="NoExecute").time_added.seconds = added
    return c


ADMITTED_FOR_FIRST = admitted_record(failed())


@pytest.mark.parametrize(("record", "now", "expected"), [
    (ADMITTED_FOR_FIRST, failed(), True),
    # Another taint added during the same failure: the one admitted is still in force.
    (ADMITTED_FOR_FIRST, failed(taints=((NOT_READY, 100), (USER, 150))), True),
    # The readiness taint replaced: none admitted is in force, until the leader refreshes it.
    (ADMITTED_FOR_FIRST, failed(taints=((UNREACHABLE, 160),)), False),
    # Recovered and failed again: the taint is new.
    (ADMITTED_FOR_FIRST, failed(taints=((NOT_READY, 900),)), False),
    # Deleted and made again under the same name.
    (ADMITTED_FOR_FIRST, failed(uid="u2"), False),
    # Ready again, its readiness taint stale: nothing is in force.
    (ADMITTED_FOR_FIRST, failed(ready="True"), False),
    (Record(REQUESTED), failed(), False),
    (Record(HELD, "u1", reason="rate"), failed(), False),
    (None, failed(), False),
])
def test_a_record_admits_only_the_failure_it_was_written_for(record: Record | None, now: cluster_pb2.Cluster,
                                                             expected: bool) -> None:
    assert admits(record, now) is expected


@pytest.mark.parametrize("value", [
    b"", b"not json", b"[]", b'{"state": "Admitted!"}', b'{"uid": "u1"}', b'{"state": "Admitted", "uid": 7}',
    b'{"state": "Admitted", "taints": [["k"]]}', b'{"state": "Admitted", "taints": 5}',
    b'{"state": "Admitted", "taints": [["k", "v", "soon"]]}', b"{" + b" " * 70_000 + b"}",
])
def test_a_value_no_taint_manager_wrote_is_no_record(value: bytes) -> None:
    assert Record.decode(value) is None


def test_a_record_reads_back_as_written() -> None:
    record = admitted_record(failed(taints=((NOT_READY, 100), (USER, 150))))
    assert Record.decode(record.encode()) == record and record.state == ADMITTED


class Leader:
    """The leader's admission controller on a MemoryStore, its records read after each write."""

    def __init__(self, store: MemoryStore, clock: FakeClock, rate: float = 0.0) -> None:
        self.store = store
        self.records = AdmissionRecords(store)
        self.protection = EvictionProtection(clock, ProtectionConfig(primary_rate=rate))
        self.clusters: dict[str, cluster_pb2.Cluster] = {}
        self.unknown: set[str] = set()
        self.revision = 0  # the informer's: the last revision it saw
        self.reconciler = ClusterAdmissionReconciler(clock, self, self.records, self.protection)  # type: ignore[arg-type]

    def get(self, name: str) -> cluster_pb2.Cluster | None:  # the informer's get
        if name in self.unknown:
            raise Undecodable("Cluster", name)
        return self.clusters.get(name)

    def set(self, *clusters: cluster_pb2.Cluster) -> None:
        self.clusters.update({c.metadata.name: c for c in clusters})
        self.protection.observe(self.clusters.values())

    async def answer(self, name: str) -> Record | None:
        """A pass over the cluster; the record it leaves."""
        await self.records.relist()
        self.result = await self.reconciler.reconcile(name)
        await self.records.relist()
        stored = self.records.get(name)
        return stored.record if stored is not None else None


async def test_the_leader_admits_a_requested_cluster_for_its_current_failure() -> None:
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock)
    leader.set(failed(), cluster("member2"))
    assert await leader.answer("member1") is None  # nobody asked: nothing written
    await leader.records.request("member1")
    assert await leader.answer("member1") == admitted_record(failed())


async def test_at_a_rate_the_second_cluster_is_held_then_admitted_when_its_slot_comes() -> None:
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock, rate=0.5)
    leader.set(failed("a"), failed("b", uid="u2"), cluster("c"), cluster("d"), cluster("e"))
    for name in ("a", "b"):
        await leader.records.request(name)
    assert (await leader.answer("a")).state == ADMITTED  # type: ignore[union-attr]
    held = await leader.answer("b")
    assert held is not None and held.state == HELD and "0.5 clusters/s" in held.reason
    assert leader.result is not None and leader.result.requeue_after == pytest.approx(2.0)
    await clock.advance(2.0)
    assert (await leader.answer("b")).state == ADMITTED  # type: ignore[union-attr]


async def test_a_recovered_cluster_loses_its_record_and_its_next_failure_is_decided_afresh() -> None:
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock, rate=0.5)
    leader.set(failed(), cluster("member2"), cluster("member3"))
    await leader.records.request("member1")
    assert await leader.answer("member1") == admitted_record(failed())
    leader.set(failed(ready="True", taints=()))
    assert await leader.answer("member1") is None
    # Failed again at once: a request, and a new slot (the first was spent two seconds ago at most).
    again = failed(taints=((NOT_READY, 900),))
    leader.set(again)
    await leader.records.request("member1")
    held = await leader.answer("member1")
    assert held is not None and held.state == HELD


async def test_a_new_leader_keeps_its_predecessors_admission_and_refreshes_a_replaced_taint() -> None:
    store, clock = MemoryStore(), FakeClock()
    first = Leader(store, clock, rate=0.5)
    first.set(failed(), failed("member2", uid="u2"), cluster("member3"), cluster("member4"), cluster("member5"))
    await first.records.request("member1")
    assert (await first.answer("member1")).state == ADMITTED  # type: ignore[union-attr]
    # A new leader, its rate's first slot unspent: member1 keeps its admission without taking it.
    second = Leader(store, clock, rate=0.5)
    second.set(*first.clusters.values())
    assert (await second.answer("member1")).state == ADMITTED  # type: ignore[union-attr]
    await second.records.request("member2")
    assert (await second.answer("member2")).state == ADMITTED  # type: ignore[union-attr]
    # The readiness taint replaced during the same failure: admitted still, for the new taint.
    replaced = failed(taints=((UNREACHABLE, 160),))
    second.set(replaced)
    assert await second.answer("member1") == admitted_record(replaced)


async def test_a_record_that_does_not_decode_admits_nothing_and_is_decided_again() -> None:
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock)
    leader.set(failed(), cluster("member2"))
    await store.kv_create(PREFIX + "member1", b"\xff garbage", None)
    await leader.records.relist()
    stored = leader.records.get("member1")
    assert stored is not None and stored.record is None and not admits(stored.record, failed())
    assert await leader.answer("member1") == admitted_record(failed())


async def test_a_deleted_cluster_loses_its_record_and_an_unreadable_one_keeps_it() -> None:
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock)
    leader.set(failed(), failed("member2", uid="u2"), cluster("member3"), cluster("member4"), cluster("member5"))
    for name in ("member1", "member2"):
        await leader.records.request(name)
        assert (await leader.answer(name)).state == ADMITTED  # type: ignore[union-attr]
    # Its stored value no longer decodes: nothing is known of it, so nothing is decided.
    leader.unknown.add("member1")
    assert (await leader.answer("member1")).state == ADMITTED  # type: ignore[union-attr]
    del leader.clusters["member2"]
    assert await leader.answer("member2") is None
    assert not (await store.list(registry.CLUSTER)).items  # nothing else touched


async def test_a_request_about_a_failure_the_leader_has_yet_to_see_waits_for_it() -> None:
    """A replica saw the taint and asked before the leader's informer brought it: the leader,
    seeing the cluster Ready and untainted, keeps the request (its own view is older) and decides
    once the taint arrives. A request older than the leader's view of the cluster goes."""
    store, clock = MemoryStore(), FakeClock()
    leader = Leader(store, clock)
    healthy = cluster("member1")
    healthy.metadata.resource_version = "1"
    leader.set(healthy, cluster("member2"))
    await leader.records.request("member1")
    kept = await leader.answer("member1")
    assert kept is not None and kept.state == REQUESTED
    leader.set(failed())
    assert await leader.answer("member1") == admitted_record(failed())
    # Recovered, and the leader's view newer than a request made since: the request goes.
    await leader.answer("member1")
    leader.set(failed(ready="True", taints=()))
    assert await leader.answer("member1") is None
    await leader.records.request("member1")
    newer = cluster("member1")
    newer.metadata.resource_version = str(10**6)
    leader.set(newer)
    assert await leader.answer("member1") is None
    # Of a cluster the leader has never seen: kept while its informer is behind the request.
    await leader.records.request("member9")
    assert (await leader.answer("member9")).state == REQUESTED  # type: ignore[union-attr]
    leader.revision = 10**6
    assert await leader.answer("member9") is None
