"""Controllers whose keys the replicas divide by bucket (flotilla.runtime.sharing): a key is
reconciled only by the replica holding its bucket; taking a bucket looks at every key in it;
giving one up waits for its keys in flight."""

from __future__ import annotations

import asyncio

from flotilla.aio.clock import FakeClock
from flotilla.runtime.controller import Controller, Result
from flotilla.runtime.sharing import BUCKETS, Owned, ShardedControllers, buckets
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store.shards import bucket_of

KEYS = [f"ResourceBinding:default/app-{i}" for i in range(200)]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hold = asyncio.Event()
        self.hold.set()

    async def reconcile(self, key: str) -> Result | None:
        self.seen.append(key)
        await self.hold.wait()
        return None


def test_every_key_has_one_of_the_buckets_and_they_are_all_used() -> None:
    assert {bucket_of(k, BUCKETS) for k in KEYS} == set(buckets())
    assert bucket_of(KEYS[0], BUCKETS) == bucket_of(KEYS[0], BUCKETS)


async def test_only_the_keys_of_buckets_held_are_reconciled() -> None:
    held = {buckets()[0], buckets()[1]}
    recorder = Recorder()
    owned = Owned(recorder, lambda b: b in held)
    for key in KEYS:
        await owned.reconcile(key)
    assert recorder.seen == [k for k in KEYS if bucket_of(k, BUCKETS) in held]


async def test_acquire_looks_at_every_key_of_the_bucket_and_release_waits_for_those_in_flight() -> None:
    clock = FakeClock()
    recorder = Recorder()
    controller = Controller("c", recorder, WorkQueue(clock, "c"))
    glue = ShardedControllers([controller], lambda b: [k for k in KEYS if bucket_of(k, BUCKETS) == b])
    bucket = bucket_of(KEYS[0], BUCKETS)
    running = asyncio.create_task(controller.run())
    try:
        recorder.hold.clear()  # the first key's reconcile is in flight until released
        await glue.acquire(bucket)
        for _ in range(100):
            if recorder.seen:
                break
            await asyncio.sleep(0.01)
        releasing = asyncio.create_task(glue.release(bucket))
        await asyncio.sleep(0.05)
        assert not releasing.done(), "a key of the bucket is still in flight"
        recorder.hold.set()
        await asyncio.wait_for(releasing, 5)
        assert set(recorder.seen) == {k for k in KEYS if bucket_of(k, BUCKETS) == bucket}
    finally:
        await controller.stop()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


def test_a_key_of_a_bucket_not_held_is_not_even_queued() -> None:
    held = {buckets()[0]}
    controller = Controller("c", Owned(Recorder(), lambda b: b in held), WorkQueue(FakeClock(), "c"))
    for key in KEYS:
        controller.enqueue(key)
    assert len(controller.queue) == sum(bucket_of(k, BUCKETS) in held for k in KEYS) > 0
