import asyncio
import logging
import random

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.runtime.controller import Controller, Result
from flotilla.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.timeout(5)

EPS = 0.0001


class Recorder:
    """Reconciler that records calls and returns a canned result."""

    def __init__(self, clock: FakeClock, result: Result | None = None) -> None:
        self.clock = clock
        self.result = result
        self.calls: list[tuple[str, float]] = []

    async def reconcile(self, key: str) -> Result | None:
        self.calls.append((key, self.clock.monotonic()))
        return self.result


class Flaky:
    """Fails `failures` times, then succeeds."""

    def __init__(self, clock: FakeClock, failures: int) -> None:
        self.clock = clock
        self.failures = failures
        self.calls: list[float] = []

    async def reconcile(self, key: str) -> Result | None:
        self.calls.append(self.clock.monotonic())
        if self.failures:
            self.failures -= 1
            raise RuntimeError("member1 unreachable")
        return None


def start(controller: Controller) -> asyncio.Task[None]:
    return asyncio.create_task(controller.run())


async def stop(controller: Controller, runner: asyncio.Task[None]) -> None:
    await controller.stop()
    await runner
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_reconciles_an_enqueued_key() -> None:
    clock = FakeClock()
    reconciler = Recorder(clock)
    controller = Controller("test", reconciler, WorkQueue(clock))
    runner = start(controller)

    controller.enqueue("default/nginx")
    await clock.advance(0)
    assert reconciler.calls == [("default/nginx", 0.0)]
    await stop(controller, runner)


async def test_a_failing_key_is_retried_with_backoff_then_forgotten() -> None:
    clock = FakeClock()
    reconciler = Flaky(clock, failures=2)
    queue = WorkQueue(clock)  # base backoff 5ms
    controller = Controller("test", reconciler, queue, logger=logging.getLogger("test.flaky"))
    runner = start(controller)

    controller.enqueue("default/nginx")
    await clock.advance(0)
    assert reconciler.calls == [0.0]
    assert queue.num_requeues("default/nginx") == 1

    await clock.advance(0.005 - EPS)
    assert len(reconciler.calls) == 1
    await clock.advance(EPS)
    assert reconciler.calls == [0.0, 0.005]
    assert queue.num_requeues("default/nginx") == 2

    await clock.advance(0.010 - EPS)
    assert len(reconciler.calls) == 2
    await clock.advance(EPS)
    assert reconciler.calls == [0.0, 0.005, 0.015]
    assert queue.num_requeues("default/nginx") == 0

    await clock.advance(60)
    assert len(reconciler.calls) == 3
    await stop(controller, runner)


async def test_a_failure_logs_one_line_and_the_traceback_only_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    logger = logging.getLogger("test.controller.logging")
    controller = Controller("binding", Flaky(clock, failures=2), WorkQueue(clock), logger=logger)
    runner = start(controller)

    with caplog.at_level(logging.INFO, logger=logger.name):
        controller.enqueue("default/nginx")
        await clock.advance(0)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert not record.exc_info
    message = record.getMessage()
    assert "controller=binding" in message
    assert "key=default/nginx" in message
    assert "RuntimeError: member1 unreachable" in message

    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        await clock.advance(1)
    [record] = caplog.records
    assert record.exc_info is not None
    await stop(controller, runner)


async def test_a_raising_reconcile_does_not_kill_the_worker() -> None:
    clock = FakeClock()

    class FailsOnA:
        def __init__(self) -> None:
            self.succeeded: list[str] = []

        async def reconcile(self, key: str) -> Result | None:
            if key == "a":
                raise ValueError("bad object")
            self.succeeded.append(key)
            return None

    reconciler = FailsOnA()
    controller = Controller(
        "test", reconciler, WorkQueue(clock), workers=1, logger=logging.getLogger("test.fails")
    )
    runner = start(controller)
    controller.enqueue("a")
    controller.enqueue("b")
    await clock.advance(0)
    assert reconciler.succeeded == ["b"]
    await stop(controller, runner)


async def test_requeue_after_is_honoured() -> None:
    clock = FakeClock()
    reconciler = Recorder(clock, Result(requeue_after=30))
    controller = Controller("test", reconciler, WorkQueue(clock))
    runner = start(controller)

    controller.enqueue("member1")
    await clock.advance(30 - EPS)
    assert [t for _, t in reconciler.calls] == [0.0]
    await clock.advance(EPS)
    assert [t for _, t in reconciler.calls] == [0.0, 30.0]
    await stop(controller, runner)


async def test_a_key_added_while_reconciling_runs_again_once_and_never_concurrently() -> None:
    clock = FakeClock()
    release = asyncio.Event()
    runs: list[str] = []

    class Blocking:
        async def reconcile(self, key: str) -> Result | None:
            runs.append("start")
            if len(runs) == 1:
                await release.wait()
            runs.append("end")
            return None

    controller = Controller("test", Blocking(), WorkQueue(clock), workers=4)
    runner = start(controller)
    controller.enqueue("a")
    await clock.advance(0)
    for _ in range(3):
        controller.enqueue("a")
    await clock.advance(0)
    assert runs == ["start"]  # three idle workers, yet none took "a"

    release.set()
    await clock.advance(0)
    assert runs == ["start", "end", "start", "end"]
    await stop(controller, runner)


async def test_many_workers_never_reconcile_one_key_concurrently_and_miss_no_add() -> None:
    clock = FakeClock()
    rng = random.Random(1234)
    keys = [f"default/app-{i}" for i in range(16)]
    tick = iter(range(1_000_000))
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    active: set[str] = set()
    overlaps: list[str] = []
    most_active = 0

    class Overlaps:
        async def reconcile(self, key: str) -> Result | None:
            nonlocal most_active
            if key in active:
                overlaps.append(key)
            active.add(key)
            most_active = max(most_active, len(active))
            last_start[key] = next(tick)
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            active.discard(key)
            return None

    queue = WorkQueue(clock)
    controller = Controller("test", Overlaps(), queue, workers=4)
    runner = start(controller)
    for _ in range(2000):
        key = rng.choice(keys)
        last_add[key] = next(tick)
        controller.enqueue(key)
        if rng.random() < 0.5:
            await asyncio.sleep(0)

    for _ in range(1000):
        if not active and len(queue) == 0:
            break
        await asyncio.sleep(0)
    assert not active and len(queue) == 0

    assert overlaps == []
    assert most_active > 1  # the workers really did run side by side
    late = [key for key in last_add if last_start.get(key, -1) < last_add[key]]
    assert late == []  # every key was reconciled after its last add
    await stop(controller, runner)


async def test_stop_waits_for_the_current_key_and_takes_no_more() -> None:
    clock = FakeClock()
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    class Slow:
        async def reconcile(self, key: str) -> Result | None:
            started.set()
            await release.wait()
            finished.append(key)
            return Result(requeue_after=60)

    controller = Controller("test", Slow(), WorkQueue(clock), workers=1)
    runner = start(controller)
    controller.enqueue("a")
    controller.enqueue("b")
    await started.wait()

    stopper = asyncio.create_task(controller.stop())
    await clock.advance(0)
    assert not stopper.done()

    release.set()
    await stopper
    assert runner.done() and runner.exception() is None
    assert finished == ["a"]
    assert clock.pending_sleepers() == 0
    await stop(controller, runner)  # a second stop is harmless


async def test_stop_closes_the_requeue_timer() -> None:
    clock = FakeClock()
    controller = Controller("test", Recorder(clock, Result(requeue_after=60)), WorkQueue(clock), workers=3)
    runner = start(controller)
    controller.enqueue("a")
    await clock.wait_for_sleepers(1)
    await stop(controller, runner)
    assert clock.pending_sleepers() == 0


async def test_stop_before_run_makes_run_return_at_once() -> None:
    clock = FakeClock()
    reconciler = Recorder(clock)
    controller = Controller("test", reconciler, WorkQueue(clock), workers=2)
    controller.enqueue("a")
    await controller.stop()
    await asyncio.wait_for(controller.run(), timeout=0.1)
    assert reconciler.calls == []


async def test_run_twice_is_refused() -> None:
    clock = FakeClock()
    controller = Controller("test", Recorder(clock), WorkQueue(clock))
    runner = start(controller)
    await clock.advance(0)
    with pytest.raises(RuntimeError, match="already running"):
        await controller.run()
    await stop(controller, runner)


async def test_cancelling_run_cancels_the_workers() -> None:
    clock = FakeClock()
    controller = Controller("test", Recorder(clock), WorkQueue(clock), workers=4)
    runner = start(controller)
    await clock.advance(0)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_a_controller_needs_a_worker() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        Controller("test", Recorder(clock), WorkQueue(clock), workers=0)
