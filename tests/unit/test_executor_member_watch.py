"""The pure parts of member status by watch: the per-kind cache and the Work index."""

from __future__ import annotations

import random

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.member.client import MemberClient
from flotilla.member.watches import KindCache, MemberWatches
from services.executor.work_status import member_objects_of


def obj(name: str, version: str, namespace: str = "default") -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": version}}


def test_a_list_reports_what_changed_came_or_went_since_the_last() -> None:
    cache = KindCache()
    assert not cache.synced
    assert cache.replace([obj("a", "1"), obj("b", "2")]) == {("default", "a"), ("default", "b")}
    assert cache.synced and cache.lists == 1
    assert cache.replace([obj("a", "1"), obj("b", "3"), obj("c", "4")]) == {("default", "b"), ("default", "c")}
    assert cache.replace([obj("c", "4")]) == {("default", "a"), ("default", "b")}
    assert cache.lists == 3


def test_watch_events_update_the_cache() -> None:
    cache = KindCache()
    cache.replace([])
    assert cache.apply("ADDED", obj("a", "1")) == ("default", "a")
    cache.apply("MODIFIED", obj("a", "2"))
    assert cache.get(("default", "a")) == obj("a", "2")
    cache.apply("DELETED", obj("a", "3"))
    assert cache.objects == {} and cache.get(("default", "a")) is None


def test_works_are_indexed_by_the_member_objects_they_carry() -> None:
    work = work_pb2.Work()
    work.metadata.namespace = execution_namespace("member1")
    for manifest in ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}},
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}):
        work.spec.workload.manifests.append(codec.raw_json(manifest))
    assert member_objects_of(work) == ["member1/apps/v1/Deployment/ns/web", "member1/v1/Namespace//ns"]
    work.metadata.namespace = "default"
    assert member_objects_of(work) == []


def test_resyncs_are_spread_over_half_to_one_and_a_half_periods() -> None:
    # Watches started together (members joining at once) must not all report their objects again
    # in the same second.
    async def connect(_: cluster_pb2.Cluster) -> MemberClient:
        raise AssertionError("no member is reached")

    watches = MemberWatches(FakeClock(), connect, lambda _: True, lambda *_: None, lambda *_: None, resync=300.0,
                            rng=random.Random(7))
    waits = [watches.next_resync() for _ in range(1000)]
    assert 150.0 <= min(waits) < 160.0 and 440.0 < max(waits) < 450.0
    # Spread evenly: no 30 s window holds more than a sixth of them (a tenth on average).
    assert max(sum(start <= w < start + 30 for w in waits) for start in range(150, 420, 10)) < 1000 / 6
