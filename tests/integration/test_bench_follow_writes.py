"""The failover benchmark's one watch over a failover: every write counted by resource, and only
the affected bindings decoded, each write once, split into the failover's own and the executor's
reports of their Works; its counts are complete once it has read etcd's revision at the end."""

from __future__ import annotations

import asyncio

from flotilla.api import keys, registry
from flotilla.api.v1 import work_pb2
from flotilla.plane.benchmarks.failover import NAMESPACE, Writes, current_revision, follow_writes
from flotilla.store import Store
from flotilla.store.base import copy_of


def binding(name: str) -> work_pb2.ResourceBinding:
    rb = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    rb.metadata.namespace, rb.metadata.name = NAMESPACE, name
    rb.spec.clusters.add(name="member1")
    return rb


async def test_only_the_affected_bindings_are_decoded_and_every_write_is_counted(store: Store) -> None:
    followed = await store.create(binding("app-00000-deployment"))
    other = await store.create(binding("app-00001-deployment"))
    rt = registry.RESOURCE_BINDING
    key = keys.etcd_key(rt.resource, NAMESPACE, followed.metadata.name)
    revision = (await store.list(rt, NAMESPACE)).revision
    writes = Writes()
    seen: list[tuple[str, list[str]]] = []

    def see(etcd_key: str, rb: work_pb2.ResourceBinding) -> None:
        seen.append((etcd_key, [t.name for t in rb.spec.clusters]))

    following = asyncio.create_task(follow_writes(store, revision, {key: followed}, writes, see))
    try:
        # The failover's own write (spec), then the executor's report (aggregated status only).
        moved = copy_of(followed)
        moved.spec.clusters[0].name = "member2"
        moved = await store.update(moved)
        reported = copy_of(moved)
        reported.status.aggregated_status.add(cluster_name="member2", applied=True)
        await store.update_status(reported)
        # A binding not followed is counted, never decoded.
        elsewhere = copy_of(other)
        elsewhere.spec.clusters[0].name = "member3"
        await store.update(elsewhere)
        # No waiting on what the counts should come to: the revision at the end says when they are whole.
        assert await writes.reach(await current_revision(store), timeout=30)
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
    counts = writes.counts
    assert seen == [(key, ["member2"]), (key, ["member2"])]
    assert counts["affected_bindings:failover"] == 1
    assert counts["affected_bindings:work_status"] == 1
    assert counts["resourcebindings"] == 3
