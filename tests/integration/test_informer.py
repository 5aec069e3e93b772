"""An informer sees every change exactly once, in order, across a restart of etcd itself.

What informers do on either store (cache, indexes, resume, relist after compaction, corrupt
values) is in test_store_contract.py; this is what only a real etcd can show."""

from __future__ import annotations

from flotilla.api.v1 import cluster_pb2
from flotilla.store import Informer, Store
from flotilla.store.embedded import EmbeddedEtcd
from tests.factories import make_cluster
from tests.integration.test_store_contract import Recorder, bump, running


async def test_every_change_once_in_order_across_etcd_restart(
    private_etcd: EmbeddedEtcd, private_store: Store
) -> None:
    informer = Informer(private_store, cluster_pb2.Cluster)
    rec = Recorder()
    informer.add_handler(rec)
    writer = await Store.connect(private_etcd.endpoint)
    expected: list[tuple[str, str, str]] = []
    try:
        async with running(informer):
            await writer.create(make_cluster("a"))
            expected.append(("ADDED", "a", ""))
            for n in range(1, 4):
                await bump(writer, "a", n)
                expected.append(("MODIFIED", "a", str(n)))
            await rec.wait_for(len(expected))

            private_etcd.stop()
            private_etcd.start()

            # Written while the informer's watch is still re-establishing itself.
            await writer.create(make_cluster("b"))
            expected.append(("ADDED", "b", ""))
            for n in range(4, 7):
                await bump(writer, "a", n)
                expected.append(("MODIFIED", "a", str(n)))
            await writer.delete(cluster_pb2.Cluster, "", "b")
            expected.append(("DELETED", "b", ""))
            await rec.wait_for(len(expected))
            # Give a replay, were there one, the chance to show itself.
            await bump(writer, "a", 99)
            expected.append(("MODIFIED", "a", "99"))
            await rec.wait_for(len(expected))
        assert rec.seen == expected
        assert informer.relists == 0
    finally:
        await writer.close()
