"""`flotillactl taint` driving evictions through the running taint manager on a real etcd,
through the webhook. (The taint timeline on a fake clock and the eviction storm run on a
MemoryStore: tests/unit/test_taint_manager_*_memory.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from flotilla.aio.clock import RealClock
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from tests.conftest import CtlResult
from tests.taint_support import make_binding, ready_cluster, running, taints_of
from tests.watching import Watch


def test_manual_taint_evicts_and_its_removal_stops_pending(
    webhook: object, clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]
) -> None:
    async def scenario() -> None:
        store = await Store.connect(clean_etcd.endpoint)
        try:
            for name in ("member1", "member2"):
                await ready_cluster(store, name)
            untolerating, patient = make_binding(1), make_binding(10)  # make_binding(10) tolerates an hour
            for b in (untolerating, patient):
                await store.create(b)
            async with running(store, RealClock()) as manager:
                bindings = manager.bindings["ResourceBinding"]
                watch = Watch(bindings)
                tainted = await asyncio.to_thread(ctl, "taint", "clusters", "member1", "dedicated=x:NoExecute")
                assert tainted.code == 0, tainted.err
                key = f"default/{untolerating.metadata.name}"
                await watch.until(lambda: [t.name for t in bindings.get(key).spec.clusters] == ["member2"])
                pending_key = f"ResourceBinding:default/{patient.metadata.name}"
                await watch.until(lambda: pending_key in manager.state.pending)
                (pending,) = manager.state.pending[pending_key]
                assert pending.cluster == "member1"

                removed = await asyncio.to_thread(ctl, "taint", "clusters", "member1", "dedicated:NoExecute-")
                assert removed.code == 0, removed.err
                cluster_watch = Watch(manager.clusters)
                await cluster_watch.until(lambda: not taints_of(manager.clusters, "member1"))
                async with asyncio.timeout(10):
                    while pending_key in manager.state.pending:
                        await asyncio.sleep(0.01)
                patient_now = bindings.get(f"default/{patient.metadata.name}")
                assert [t.name for t in patient_now.spec.clusters] == ["member1", "member2"]
        finally:
            await store.close()

    asyncio.run(scenario())
