"""The etcd client over a 3-member etcd (`flotilla up --etcd-members 3`): losing the member it
talks to (the first: gRPC's pick_first dials the addresses in order) costs a retry, not the
connection — reads, compare-and-swap writes and an informer's watch carry on through the others,
and the informer misses no event."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from flotilla.api import registry
from flotilla.store import Informer, Store, Unavailable
from flotilla.store.embedded import EtcdCluster
from tests.factories import make_cluster
from tests.watching import Watch

pytestmark = pytest.mark.integration


@pytest.fixture
def etcd_cluster(tmp_path: Path) -> Iterator[EtcdCluster]:
    cluster = EtcdCluster(tmp_path / "etcd", 3)
    cluster.start()
    yield cluster
    cluster.stop()


async def create_retrying(store: Store, name: str) -> None:
    """A write as every reconciler makes it: retried after Unavailable (the broken connection
    fails the calls in flight; the next one goes to another member)."""
    for _ in range(50):
        try:
            await store.create(make_cluster(name))
            return
        except Unavailable:
            await asyncio.sleep(0.1)
    raise AssertionError(f"could not create {name}")


@pytest.mark.timeout(60)
async def test_losing_the_member_the_client_talks_to_loses_nothing(etcd_cluster: EtcdCluster) -> None:
    store = await Store.connect(etcd_cluster.endpoint)
    informer = Informer(store, registry.CLUSTER)
    watch = Watch(informer)
    task = asyncio.create_task(informer.run())
    try:
        await informer.wait_synced()
        await store.create(make_cluster("before"))
        etcd_cluster.members[0].kill()
        await create_retrying(store, "during")
        assert (await store.get(registry.CLUSTER, "", "during")).metadata.name == "during"
        # The informer re-watches from its last revision through another member.
        await watch.until(lambda: informer.get("before") is not None and informer.get("during") is not None, 30)
        await store.mutate(registry.CLUSTER, "", "during", lambda c: c.metadata.labels.update(seen="yes"))
        await watch.until(lambda: informer.get("during").metadata.labels.get("seen") == "yes", 30)  # type: ignore[union-attr]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()
