"""Status writes from an informer's copy: a compare-and-swap on the copy, a fresh read only on a
conflict, and no trust in a copy older than the writer's own last write."""

from __future__ import annotations

from collections.abc import Callable

from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.store import MemoryStore
from flotilla.store.base import KeyValue, copy_of
from services.executor.cached_write import CachedStatusWriter


def work(name: str = "w") -> work_pb2.Work:
    obj = work_pb2.Work()
    obj.metadata.namespace, obj.metadata.name = "karmada-es-member1", name
    return obj


def set_message(message: str) -> Callable[[work_pb2.Work], bool]:
    def change(obj: work_pb2.Work) -> bool:
        if obj.status.conditions and obj.status.conditions[0].message == message:
            return False
        del obj.status.conditions[:]
        obj.status.conditions.add(type="Applied", status="True", message=message)
        return True

    return change


def message(obj: work_pb2.Work) -> str:
    return obj.status.conditions[0].message if obj.status.conditions else ""


async def test_writes_from_the_copy_and_falls_back_to_a_fresh_read_on_conflict() -> None:
    store = MemoryStore()
    created = await store.create(work())
    writer = CachedStatusWriter(store)
    written = await writer.mutate(registry.WORK, "karmada-es-member1", "w", created, set_message("a"))
    assert message(written) == "a" and message(created) == ""  # the copy itself is left alone
    # `created` is now stale: its compare-and-swap fails and a fresh read takes over.
    again = await writer.mutate(registry.WORK, "karmada-es-member1", "w", copy_of(created), set_message("b"))
    assert message(await store.get(registry.WORK, "karmada-es-member1", "w")) == "b"
    assert int(again.metadata.resource_version) > int(written.metadata.resource_version)


async def test_a_copy_older_than_its_own_last_write_is_not_trusted_to_say_nothing_is_due() -> None:
    store = MemoryStore()
    first = await store.create(work())
    writer = CachedStatusWriter(store)
    with_a = await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("a"))
    await writer.mutate(registry.WORK, "karmada-es-member1", "w", with_a, set_message("b"))
    # The informer still shows the version with "a": judged on it, "a" would need no write.
    await writer.mutate(registry.WORK, "karmada-es-member1", "w", with_a, set_message("a"))
    assert message(await store.get(registry.WORK, "karmada-es-member1", "w")) == "a"


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def kv_get(self, key: str) -> KeyValue | None:
        self.reads += 1
        return await super().kv_get(key)


async def test_while_the_informer_lags_its_own_last_write_is_the_base_without_a_read() -> None:
    store = CountingStore()
    first = await store.create(work())
    writer = CachedStatusWriter(store)
    await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("a"))
    # The informer still shows `first`; the next write starts from the writer's own "a".
    await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("b"))
    assert store.reads == 0
    assert message(await store.get(registry.WORK, "karmada-es-member1", "w")) == "b"
    # ... and "nothing to do" is judged on that version too.
    unchanged = await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("b"))
    assert message(unchanged) == "b" and store.reads == 1  # the one read is the assertion's get


async def test_its_own_last_write_overtaken_by_another_writer_falls_back_to_a_fresh_read() -> None:
    store = CountingStore()
    first = await store.create(work())
    writer = CachedStatusWriter(store)
    mine = await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("a"))
    theirs = copy_of(mine)
    set_message("theirs")(theirs)
    await store.update_status(theirs)
    await writer.mutate(registry.WORK, "karmada-es-member1", "w", first, set_message("b"))
    assert message(await store.get(registry.WORK, "karmada-es-member1", "w")) == "b"


async def test_objects_of_two_resources_with_one_name_are_remembered_apart() -> None:
    store = CountingStore()
    the_work = await store.create(work("same"))
    binding = work_pb2.ResourceBinding()
    binding.metadata.namespace, binding.metadata.name = "karmada-es-member1", "same"
    the_binding = await store.create(binding)
    writer = CachedStatusWriter(store)
    await writer.mutate(registry.WORK, "karmada-es-member1", "same", the_work, set_message("a"))

    def scheduled(obj: work_pb2.ResourceBinding) -> bool:
        obj.status.scheduler_observed_generation = 7
        return True

    # The binding's informer copy is current: the Work written above must not stand in for it.
    written = await writer.mutate(registry.RESOURCE_BINDING, "karmada-es-member1", "same", the_binding, scheduled)
    assert isinstance(written, work_pb2.ResourceBinding) and written.status.scheduler_observed_generation == 7
