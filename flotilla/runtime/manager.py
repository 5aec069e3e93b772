"""A controller manager: owns a service's informers, controllers and background loops, routes
informer events to controllers through pure key functions, and keeps every task alive.

Wiring a service is declarative: ask for informers (shared per resource and namespace), make
controllers, and say which events become which keys:

    clusters = manager.informer(registry.CLUSTER)
    taints = manager.controller("cluster-taints", reconciler, workers=4)
    manager.watch(clusters, cluster_name, taints, predicate=not_deleted)
    await manager.run()

`to_keys` and predicates are functions of the event (and, at most, of informer caches), so
routing is table-tested without etcd. Side effects other than enqueueing (invalidating a
cache, starting another informer) are explicit `on_event` callbacks; callbacks and watches on
one informer run in registration order, synchronously, for each event.

`run()` starts the informers, waits until every one has synced, then starts controllers and
runnables: a reconciler never acts on a partial view. Any task that fails is logged, reported
through `on_unhealthy`, and restarted with exponential backoff on the manager's clock; when
no task is down any more, `on_healthy` is called. Without this a dead informer task leaves a
leader that looks healthy while nothing gets reconciled.

A manager made with `lender=` another, running manager uses that one's informers for the
resources it already has instead of making its own: one process that runs work on every replica
(the executor's share) and more work while it leads decodes each event once. A borrowed informer
is neither started nor stopped by the borrower; the borrower's handlers go when it stops, and
when it starts they are given the lender's cache as ADDED events, as a fresh list would give them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

from google.protobuf.message import Message

from flotilla.aio.clock import Clock
from flotilla.api import keys
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.registry import ResourceType
from flotilla.runtime.controller import Controller, Reconciler
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store.base import meta_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from flotilla.store.objects import ResourceRef, resource_type_of
from flotilla.store.protocol import ObjectStore

__all__ = ["Manager", "Predicate", "ToKeys"]

log = logging.getLogger(__name__)

M = TypeVar("M")
Msg = TypeVar("Msg", bound=Message)


ToKeys = Callable[[WatchEvent[M]], Iterable[str]]
Predicate = Callable[[WatchEvent[M]], bool]
EventCallback = Callable[[WatchEvent[M]], None]


class InformerFactory(Protocol):
    """Makes the informer of a resource (in one namespace, or all)."""

    def __call__(self, ref: ResourceRef[Msg], namespace: str | None, /) -> Informer[Msg]: ...


UNDECODABLE_REASON = "UndecodableObject"


def stand_in(rt: ResourceType[Msg], etcd_key: str) -> Msg:
    """An empty object named by an etcd key, for an Event about a value that cannot be read."""
    namespace, name = keys.split_key(etcd_key[len(keys.etcd_prefix(rt.resource)):])
    obj = rt.message()
    meta = meta_of(obj)
    meta.name, meta.namespace = name, namespace
    for field, value in (("kind", rt.kind), ("api_version", rt.api_version)):
        if field in obj.DESCRIPTOR.fields_by_name:
            setattr(obj, field, value)
    return obj


class Manager:
    def __init__(
        self,
        store: ObjectStore | None,
        clock: Clock,
        *,
        on_unhealthy: Callable[[str, BaseException], Awaitable[None] | None] | None = None,
        on_healthy: Callable[[], Awaitable[None] | None] | None = None,
        backoff: tuple[float, float] = (1.0, 60.0),
        informer_factory: InformerFactory | None = None,
        logger: logging.Logger | None = None,
        events: EventRecorder | None = None,
        compact_informers: bool = False,
        lender: Manager | None = None,
    ) -> None:
        if store is None and informer_factory is None:
            raise ValueError("a manager needs a store or an informer factory")
        self.clock = clock
        self._store = store
        self._new_informer = informer_factory or self._real_informer
        self._events = events
        # Informers keeping objects as bytes (flotilla.store.informer): for a service that holds
        # many large objects and reads few of them at a time.
        self._compact = compact_informers
        self._on_unhealthy = on_unhealthy
        self._on_healthy = on_healthy
        self._backoff = backoff
        self._log = logger or log
        self._informers: dict[tuple[str, str | None], Informer[Any]] = {}
        self._controllers: dict[str, Controller] = {}
        self._runnables: dict[str, Callable[[], Awaitable[None]]] = {}
        self._informer_tasks: list[asyncio.Task[None]] = []
        self._informer_task: dict[tuple[str, str | None], asyncio.Task[None]] = {}
        self._controller_tasks: list[asyncio.Task[None]] = []
        self._runnable_tasks: list[asyncio.Task[None]] = []
        self._down: dict[str, BaseException] = {}
        self._started = False
        self._informers_started = False
        self._stop = asyncio.Event()
        self._fatal: BaseException | None = None
        self._lender = lender
        # Borrowed informers (the lender's), and the handlers this manager put on them.
        self._borrowed: set[tuple[str, str | None]] = set()
        self._borrowed_handlers: list[tuple[Informer[Any], Any]] = []

    # -- building ------------------------------------------------------------------------------

    def _real_informer(self, ref: ResourceRef[Msg], namespace: str | None) -> Informer[Msg]:
        assert self._store is not None
        rt = resource_type_of(ref)

        async def undecodable(etcd_key: str, error: str) -> None:
            # The informer already logged and counted it; the Event is what `describe` shows.
            if self._events is not None:
                await self._events.warning(stand_in(rt, etcd_key), UNDECODABLE_REASON,
                                           f"stored value at {etcd_key} cannot be decoded; the object is not taken "
                                           f"for deleted, and waits for a good value: {error}")

        return Informer(self._store, ref, namespace=namespace, on_undecodable=undecodable, compact=self._compact)

    def informer(self, resource_type: ResourceRef[Msg], namespace: str | None = None) -> Informer[Msg]:
        """The informer of a resource (in one namespace, or all), made on first use.

        Every version of a kind is stored under one prefix, so informers are shared by resource,
        not by version. Asked for once the manager runs, it starts at once; add its indexers and
        handlers before the next await, so it misses no event.
        """
        rt = resource_type_of(resource_type)
        key = (rt.resource, namespace if rt.namespaced else None)
        informer = self._informers.get(key)
        if informer is None and self._lender is not None and key in self._lender._informers:
            informer = self._lender._informers[key]
            self._informers[key] = informer
            self._borrowed.add(key)
            return informer
        if informer is None:
            informer = self._new_informer(resource_type, key[1])
            self._informers[key] = informer
            if self._informers_started:
                self._start_informer(key, informer)
        return informer

    @property
    def informers(self) -> list[Informer[Any]]:
        return list(self._informers.values())

    async def drop_informer(self, resource_type: ResourceRef[Msg], namespace: str | None = None) -> bool:
        """Stop and forget the informer of a resource nobody reads any more: its watch, its cache
        and its handlers go. Asked for again, a new one starts from a fresh list. Whether there was one."""
        rt = resource_type_of(resource_type)
        key = (rt.resource, namespace if rt.namespaced else None)
        if self._informers.pop(key, None) is None:
            return False
        if key in self._borrowed:
            self._borrowed.discard(key)
            return True
        task = self._informer_task.pop(key, None)
        if task is not None:
            self._informer_tasks.remove(task)
            await _cancel([task])
        return True

    def controller(self, name: str, reconciler: Reconciler, workers: int = 1,
                   logger: logging.Logger | None = None, eviction: bool = False,
                   priority: Callable[[str], int] | None = None) -> Controller:
        """`priority(key)` orders the ready keys, highest first (see WorkQueue); without it FIFO."""
        if name in self._controllers:
            raise ValueError(f"controller {name} already exists")
        controller = Controller(name, reconciler, WorkQueue(self.clock, name, priority=priority), workers=workers,
                                logger=logger, eviction=eviction)
        self._controllers[name] = controller
        if self._started:
            self._controller_tasks.append(self._spawn(f"controller/{name}", controller.run))
        return controller

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers.values())

    def watch(self, informer: Informer[Msg], to_keys: ToKeys[Msg], controller: Controller,
              predicate: Predicate[Msg] | None = None) -> None:
        """Enqueue `to_keys(event)` on `controller` for each event `predicate` lets through."""

        def handle(kind: EventType, obj: Msg, old: Msg | None) -> None:
            event = WatchEvent(kind, obj, old)
            if predicate is not None and not predicate(event):
                return
            for key in to_keys(event):
                controller.enqueue(key)

        self._add_handler(informer, handle)

    def on_event(self, informer: Informer[Msg], callback: EventCallback[Msg],
                 predicate: Predicate[Msg] | None = None) -> None:
        """Call `callback` for each event: for side effects that are not enqueueing keys."""

        def handle(kind: EventType, obj: Msg, old: Msg | None) -> None:
            event = WatchEvent(kind, obj, old)
            if predicate is None or predicate(event):
                callback(event)

        self._add_handler(informer, handle)

    def _add_handler(self, informer: Informer[Msg], handle: Any) -> None:
        informer.add_handler(handle)
        if any(self._informers.get(key) is informer for key in self._borrowed):
            self._borrowed_handlers.append((informer, handle))

    def add_runnable(self, name: str, factory: Callable[[], Awaitable[None]]) -> None:
        """A loop that is not a controller, started with the controllers and supervised like them."""
        if name in self._runnables:
            raise ValueError(f"runnable {name} already exists")
        self._runnables[name] = factory
        if self._started:
            self._runnable_tasks.append(self._spawn(f"runnable/{name}", factory))

    # -- health --------------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        return not self._down

    @property
    def down(self) -> dict[str, BaseException]:
        """Tasks that failed and are waiting to be restarted, with their errors."""
        return dict(self._down)

    async def _mark_down(self, name: str, error: BaseException) -> None:
        self._down[name] = error
        if self._on_unhealthy is not None:
            await _maybe_await(self._on_unhealthy(name, error))

    async def _mark_up(self, name: str) -> None:
        if self._down.pop(name, None) is not None and not self._down and self._on_healthy is not None:
            await _maybe_await(self._on_healthy())

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled or `stop()`; a task failing with a BaseException (not an
        Exception, which is restarted) stops everything and is raised."""
        if self._started or self._informers_started:
            raise RuntimeError("a manager runs once")
        try:
            self._informers_started = True
            for key, informer in list(self._informers.items()):
                if key not in self._borrowed:
                    self._start_informer(key, informer)
            for informer in list(self._informers.values()):
                await informer.wait_synced()
            self._replay_borrowed()
            self._started = True
            for name, controller in self._controllers.items():
                self._controller_tasks.append(self._spawn(f"controller/{name}", controller.run))
            for name, factory in self._runnables.items():
                self._runnable_tasks.append(self._spawn(f"runnable/{name}", factory))
            await self._stop.wait()
        finally:
            await self._shutdown()
        if self._fatal is not None:
            raise self._fatal

    def stop(self) -> None:
        """Make `run()` stop everything and return."""
        self._stop.set()

    async def _shutdown(self) -> None:
        # Controllers first, so no reconciler reads an informer that is going away; each
        # finishes the keys its workers hold. All queues close at once: stopping them one by
        # one would let the later ones keep taking new keys while the earlier ones drain.
        for controller in self._controllers.values():
            controller.queue.shutdown()
        await asyncio.gather(*(controller.stop() for controller in self._controllers.values()))
        await _cancel(self._controller_tasks)
        await _cancel(self._runnable_tasks)
        await _cancel(self._informer_tasks)
        for informer, handle in self._borrowed_handlers:
            informer.remove_handler(handle)
        self._borrowed_handlers.clear()

    def _replay_borrowed(self) -> None:
        """A borrowed informer listed long ago: give this manager's handlers its cache as the
        ADDED events a fresh list would have brought, so every controller starts from all of it."""
        for informer, handle in self._borrowed_handlers:
            for obj in informer.list():
                handle(EventType.ADDED, obj, None)

    def _start_informer(self, key: tuple[str, str | None], informer: Informer[Any]) -> None:
        name = f"informer/{key[0]}" + (f"/{key[1]}" if key[1] else "")
        task = self._spawn(name, lambda: informer.run())
        self._informer_tasks.append(task)
        self._informer_task[key] = task

    def _spawn(self, name: str, factory: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._supervise(name, factory), name=name)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None and self._fatal is None:
            self._fatal = task.exception()
            self._stop.set()

    async def _supervise(self, name: str, factory: Callable[[], Awaitable[None]]) -> None:
        initial, ceiling = self._backoff
        delay = initial
        while True:
            started = self.clock.monotonic()
            try:
                await factory()
                return
            except Exception as raised:
                err = _root_cause(raised)
                # A task that ran for a while before failing is not in a crash loop.
                if self.clock.monotonic() - started >= ceiling:
                    delay = initial
                self._log.error("event=task-failed task=%s restart_in=%gs error=%s: %s",
                                name, delay, type(err).__name__, err)
                await self._mark_down(name, err)
            await self.clock.sleep(delay)
            delay = min(delay * 2, ceiling)
            self._log.info("event=task-restarted task=%s", name)
            await self._mark_up(name)


def _root_cause(err: Exception) -> Exception:
    # A controller's workers run in a TaskGroup: report the worker's error, not the group.
    while isinstance(err, ExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    return err


async def _maybe_await(result: Awaitable[None] | None) -> None:
    if inspect.isawaitable(result):
        await result


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    tasks.clear()
