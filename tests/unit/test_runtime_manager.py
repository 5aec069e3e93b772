import asyncio
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.events import EventType, WatchEvent
from flotilla.runtime.controller import Result
from flotilla.runtime.manager import Manager

pytestmark = pytest.mark.timeout(5)


class FakeInformer:
    """What the Manager uses of an informer: handlers, sync, and a run loop a test drives."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log
        self.handlers: list[Any] = []
        self._synced = asyncio.Event()
        self.fail_next: list[BaseException] = []
        self.runs = 0

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def sync(self) -> None:
        self._synced.set()

    def emit(self, kind: EventType, obj: Any, old: Any = None) -> None:
        for handler in self.handlers:
            handler(kind, obj, old)

    async def run(self) -> None:
        self.runs += 1
        self.log.append(f"start {self.name}")
        try:
            if self.fail_next:
                raise self.fail_next.pop(0)
            await asyncio.Event().wait()
        finally:
            self.log.append(f"stop {self.name}")


class Recorder:
    def __init__(self, log: list[str], name: str = "r", hold: asyncio.Event | None = None) -> None:
        self.log = log
        self.name = name
        self.hold = hold

    async def reconcile(self, key: str) -> Result | None:
        self.log.append(f"{self.name} {key}")
        if self.hold is not None:
            await self.hold.wait()
            self.log.append(f"{self.name} {key} done")
        return None


class Fixture:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.log: list[str] = []
        self.health: list[str] = []
        self.fakes: dict[str, FakeInformer] = {}

        def factory(ref: Any, namespace: str | None) -> FakeInformer:
            name = ref.resource + (f"/{namespace}" if namespace else "")
            self.fakes[name] = informer = FakeInformer(name, self.log)
            return informer

        self.manager = Manager(None, self.clock, informer_factory=factory,  # type: ignore[arg-type]
                               on_unhealthy=lambda name, err: self.health.append(f"down {name} {err}"),
                               on_healthy=lambda: self.health.append("up"), backoff=(1.0, 8.0))


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_informers_are_shared_by_resource_and_namespace() -> None:
    f = Fixture()
    works = f.manager.informer(registry.WORK)
    assert f.manager.informer(registry.WORK) is works
    assert f.manager.informer(registry.WORK, "karmada-es-a") is not works
    # Clusters are not namespaced: a namespace makes no second informer.
    assert f.manager.informer(registry.CLUSTER, "x") is f.manager.informer(registry.CLUSTER)
    assert len(f.manager.informers) == 3


async def test_controllers_start_only_after_every_informer_synced() -> None:
    f = Fixture()
    clusters = f.manager.informer(registry.CLUSTER)
    f.manager.informer(registry.WORK)
    controller = f.manager.controller("c", Recorder(f.log))
    f.manager.add_runnable("loop", lambda: _record(f.log, "runnable"))
    f.manager.watch(clusters, lambda e: [e.obj], controller)
    controller.enqueue("early")
    run = asyncio.create_task(f.manager.run())
    await settle()
    f.fakes["clusters"].sync()
    await settle()
    assert f.log == ["start clusters", "start works"]
    f.fakes["works"].sync()
    await settle()
    assert sorted(f.log[2:]) == ["r early", "runnable"]
    f.manager.stop()
    await run


async def _record(log: list[str], entry: str) -> None:
    log.append(entry)
    await asyncio.Event().wait()


async def test_watch_maps_events_through_predicate_and_to_keys() -> None:
    f = Fixture()
    informer = f.manager.informer(registry.CLUSTER)
    controller = f.manager.controller("c", Recorder(f.log))
    seen: list[WatchEvent[Any]] = []
    f.manager.on_event(informer, seen.append)
    f.manager.watch(informer, lambda e: [f"{e.obj}-1", f"{e.obj}-2"], controller,
                    predicate=lambda e: e.type is not EventType.DELETED)
    informer.emit(EventType.ADDED, "a")  # type: ignore[attr-defined]
    informer.emit(EventType.DELETED, "b")  # type: ignore[attr-defined]
    informer.emit(EventType.MODIFIED, "c", "c0")  # type: ignore[attr-defined]
    assert seen == [WatchEvent(EventType.ADDED, "a"), WatchEvent(EventType.DELETED, "b"),
                    WatchEvent(EventType.MODIFIED, "c", "c0")]
    keys = []
    while len(controller.queue):
        keys.append(await controller.queue.get())
    assert keys == ["a-1", "a-2", "c-1", "c-2"]


async def test_stop_finishes_held_keys_then_runnables_then_informers() -> None:
    f = Fixture()
    f.manager.informer(registry.CLUSTER)
    f.fakes["clusters"].sync()
    hold = asyncio.Event()
    controller = f.manager.controller("c", Recorder(f.log, hold=hold))

    async def runnable() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            f.log.append("stop runnable")

    f.manager.add_runnable("loop", runnable)
    controller.enqueue("k")
    run = asyncio.create_task(f.manager.run())
    await settle()
    assert f.log == ["start clusters", "r k"]
    run.cancel()
    await settle()
    assert f.log == ["start clusters", "r k"]  # waiting for the held key
    hold.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert f.log == ["start clusters", "r k", "r k done", "stop runnable", "stop clusters"]
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_failed_informer_is_restarted_with_backoff_and_health_follows() -> None:
    f = Fixture()
    clusters = f.manager.informer(registry.CLUSTER)
    fake = f.fakes["clusters"]
    fake.sync()
    fake.fail_next = [RuntimeError("boom"), RuntimeError("again")]
    controller = f.manager.controller("c", Recorder(f.log))
    f.manager.watch(clusters, lambda e: [e.obj], controller)
    run = asyncio.create_task(f.manager.run())
    await settle()
    assert fake.runs == 1
    assert f.health == ["down informer/clusters boom"]
    assert not f.manager.healthy
    await f.clock.advance(0.999)
    assert fake.runs == 1
    await f.clock.advance(0.001)
    # Restarted after 1s, failed again: down again, and the next wait is 2s.
    assert fake.runs == 2
    assert f.health == ["down informer/clusters boom", "up", "down informer/clusters again"]
    await f.clock.advance(1.999)
    assert fake.runs == 2
    await f.clock.advance(0.001)
    assert fake.runs == 3
    assert f.health[-1] == "up" and f.manager.healthy
    # The controller kept running throughout.
    fake.emit(EventType.ADDED, "k")
    await settle()
    assert "r k" in f.log
    f.manager.stop()
    await run


async def test_failed_controller_and_runnable_are_restarted() -> None:
    f = Fixture()
    attempts: list[float] = []

    async def flaky() -> None:
        attempts.append(f.clock.monotonic())
        if len(attempts) < 3:
            raise ValueError(f"attempt {len(attempts)}")
        await asyncio.Event().wait()

    f.manager.add_runnable("collector", flaky)
    controller = f.manager.controller("c", Recorder(f.log))
    run = asyncio.create_task(f.manager.run())
    await settle()
    await f.clock.advance(10)
    assert attempts == [0.0, 1.0, 3.0]
    assert f.health == ["down runnable/collector attempt 1", "up", "down runnable/collector attempt 2", "up"]

    # A controller whose run dies (here: a worker's queue breaking) comes back and keeps its keys.
    original = controller.queue.get
    broken = [True]

    async def get() -> str:
        if broken:
            broken.clear()
            raise RuntimeError("queue broke")
        return await original()

    controller.queue.get = get  # type: ignore[method-assign]
    controller.enqueue("wake")
    await settle()
    controller.enqueue("k")
    await f.clock.advance(1)
    assert "r k" in f.log
    assert f.health[-2:] == ["down controller/c queue broke", "up"]
    f.manager.stop()
    await run


async def test_a_late_informer_and_runnable_start_at_once() -> None:
    f = Fixture()
    run = asyncio.create_task(f.manager.run())
    await settle()
    f.manager.informer(registry.WORK)
    f.manager.add_runnable("late", lambda: _record(f.log, "late"))
    await settle()
    assert f.log == ["start works", "late"]
    f.manager.stop()
    await run
    assert f.log[-1] == "stop works"


async def test_a_base_exception_stops_the_manager_and_is_raised() -> None:
    f = Fixture()

    class Fatal(BaseException):
        pass

    async def fatal() -> None:
        raise Fatal

    f.manager.add_runnable("fatal", fatal)
    with pytest.raises(Fatal):
        await f.manager.run()
    assert f.health == []


async def test_a_borrowing_manager_shares_the_lenders_informers_and_leaves_no_handler_behind() -> None:
    """The executor's leader work borrows its share's informers: each event decoded once, every
    existing object handed to the borrower's controllers at its start, nothing left at its stop."""
    from flotilla.store.memory import MemoryStore
    from tests.factories import make_cluster

    clock = FakeClock()
    store = MemoryStore(clock)
    for name in ("m1", "m2"):
        await store.create(make_cluster(name))
    lender = Manager(store, clock)
    clusters = lender.informer(registry.CLUSTER)
    lending = asyncio.create_task(lender.run())
    await clusters.wait_synced()

    borrower = Manager(store, clock, lender=lender)
    assert borrower.informer(registry.CLUSTER) is clusters
    log: list[str] = []
    controller = borrower.controller("c", Recorder(log))
    borrower.watch(clusters, lambda e: [e.obj.metadata.name], controller)
    handlers = len(clusters._handlers)
    borrowing = asyncio.create_task(borrower.run())
    for _ in range(100):
        if sorted(log) == ["r m1", "r m2"]:
            break
        await asyncio.sleep(0.01)
    assert sorted(log) == ["r m1", "r m2"], "the lender's cache is replayed to the borrower"

    borrower.stop()
    await borrowing
    assert len(clusters._handlers) == handlers - 1, "the borrower's handler went with it"
    await store.create(make_cluster("m3"))
    for _ in range(100):
        if clusters.get("m3") is not None:
            break
        await asyncio.sleep(0.01)
    assert clusters.get("m3") is not None and not lending.done(), "the lender's informer runs on"
    lender.stop()
    await lending
