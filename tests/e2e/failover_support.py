"""What the failover e2e tests share: a plane started with `flotilla up --sim-clusters N
--profile demo`, flotillactl and `flotilla sim fault` run as processes, an informer-backed
history of the objects the services write (every version, in order, so short-lived states are
never missed), and a sampler of the workload's ready replicas in the members every 0.5 s.

Everything is awaited on a condition with a deadline; the only timed wait is `History.hold`,
which checks that something does NOT happen for a while (and fails the moment it does).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest
from google.protobuf.message import Message

from flotilla.api.conditions import is_true
from flotilla.api.events import EventType
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.member import MemberClient, MemberError, load_kubeconfig
from flotilla.plane import simclient
from flotilla.plane.local_plane import RunState
from flotilla.store import Store
from flotilla.store.informer import Informer
from tests.conftest import ROOT
from tests.e2e.planes import BIN, flotilla_up

M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class Plane:
    data_dir: Path
    endpoint: str

    def kubeconfig(self, cluster: str) -> Path:
        return self.data_dir / "sim" / "kubeconfigs" / f"{cluster}.yaml"

    def run(self, *argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)

    async def ctl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """`flotillactl ARGS` against this plane, off the event loop (the sampler keeps running)."""
        return await asyncio.to_thread(self.run, str(BIN / "flotillactl"), "--etcd-endpoints", self.endpoint,
                                       *args, timeout=timeout)

    async def ok(self, *args: str, timeout: float = 90) -> str:
        result = await self.ctl(*args, timeout=timeout)
        assert result.returncode == 0, f"flotillactl {' '.join(args)}: {result.stderr}"
        return result.stdout

    async def fault(self, cluster: str, what: str) -> None:
        result = await asyncio.to_thread(self.run, str(BIN / "flotilla"), "sim", "fault", cluster, what,
                                         "--data-dir", str(self.data_dir), "--etcd-endpoints", self.endpoint)
        assert result.returncode == 0, result.stderr

    async def fault_all(self, clusters: list[str], what: str) -> None:
        """The same fault on several members in one burst of admin calls: starting a `flotilla sim
        fault` process for each can take seconds apiece on a loaded machine, and members failing
        or recovering seconds apart are an ordinary failover, not a mass one."""
        state = RunState.load(self.data_dir)
        assert state is not None and state.sim_port, f"no simulator recorded in {self.data_dir}"
        address = f"127.0.0.1:{state.sim_port}"
        sim_dir = self.data_dir / "sim"
        await asyncio.gather(*(simclient.set_fault(address, cluster, what, data_dir=sim_dir) for cluster in clusters))

    async def rb(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return dict(json.loads(await self.ok("get", "rb", name, "-n", namespace, "-o", "json")))

    async def member_deployments(self, clusters: str) -> dict[tuple[str, str], dict[str, Any]]:
        """(cluster, name) -> the Deployment as `flotillactl member get` shows it."""
        out = await self.ok("member", "get", "deployments", "--clusters", clusters, "-o", "json")
        return {(i["cluster"], i["metadata"]["name"]): i for i in json.loads(out)["items"]}


def placed(binding: work_pb2.ResourceBinding | None) -> list[tuple[str, int]]:
    return [(t.name, t.replicas) for t in binding.spec.clusters] if binding is not None else []


def tasks(binding: work_pb2.ResourceBinding | None) -> list[str]:
    """The clusters of the binding's graceful eviction tasks."""
    return [t.from_cluster for t in binding.spec.graceful_eviction_tasks] if binding is not None else []


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    """A condition only a process shows (the CLI, kubectl), read again until it holds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: last saw {last!r}")


def settled(cluster: cluster_pb2.Cluster | None) -> bool:
    """Ready and free of taints."""
    return cluster is not None and is_true(cluster.status.conditions, "Ready") and not cluster.spec.taints


@contextlib.contextmanager
def started_plane(tmp_path_factory: pytest.TempPathFactory, clusters: int) -> Iterator[Plane]:
    with flotilla_up(tmp_path_factory, clusters) as (data_dir, endpoints):
        yield Plane(data_dir, endpoints)


@dataclass
class Version(Generic[M]):
    at: float
    type: EventType
    obj: M


class History(Generic[M]):
    """Every version of one kind's objects the informer sees, with when it saw them."""

    def __init__(self, store: Store, rt: ResourceType[M]) -> None:
        self.informer: Informer[M] = Informer(store, rt)
        self.versions: dict[str, list[Version[M]]] = {}
        self.changed = asyncio.Condition()
        self.informer.add_handler(self._record)

    async def _record(self, type_: EventType, obj: M, _old: M | None) -> None:
        meta = obj.metadata  # type: ignore[attr-defined]
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        self.versions.setdefault(key, []).append(Version(time.monotonic(), type_, obj))
        async with self.changed:
            self.changed.notify_all()

    def get(self, key: str) -> M | None:
        return self.informer.get(key)

    def of(self, key: str) -> list[Version[M]]:
        return self.versions.get(key, [])

    async def until(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        """The predicate's first truthy value on the informer's view, within `timeout` seconds."""
        try:
            async with asyncio.timeout(timeout), self.changed:
                await self.changed.wait_for(predicate)
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None
        return predicate()

    async def hold(self, invariant: Callable[[], bool], seconds: float, what: str) -> None:
        """The invariant holds on every version seen during `seconds` (fails at the first that breaks it)."""
        assert invariant(), f"{what}: broken at the start"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds), self.changed:
                await self.changed.wait_for(lambda: not invariant())
        assert invariant(), f"{what}: broken"


@contextlib.asynccontextmanager
async def history(plane: Plane, rt: ResourceType[M]) -> AsyncIterator[History[M]]:
    store = await Store.connect(plane.endpoint)
    view = History(store, rt)
    task = asyncio.create_task(view.informer.run())
    try:
        await view.informer.wait_synced()
        yield view
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()


@dataclass
class Sample:
    at: float
    # Ready replicas per cluster; None where the member did not answer (down).
    ready: dict[str, int | None]

    @property
    def total(self) -> int:
        return sum(r or 0 for r in self.ready.values())


@dataclass
class Sampler:
    """Ready replicas of one Deployment in each member, every `period` seconds, straight from the
    members (a member that does not answer counts as running nothing)."""

    plane: Plane
    clusters: list[str]
    name: str
    namespace: str = "default"
    period: float = 0.5
    samples: list[Sample] = field(default_factory=list)

    async def _one(self, client: MemberClient) -> int | None:
        try:
            obj = await client.get("apps/v1", "Deployment", self.namespace, self.name)
        except (MemberError, OSError, TimeoutError):
            return None
        return int(((obj or {}).get("status") or {}).get("readyReplicas") or 0)

    async def _run(self, clients: dict[str, MemberClient]) -> None:
        while True:
            started = time.monotonic()
            counts = await asyncio.gather(*(self._one(c) for c in clients.values()))
            self.samples.append(Sample(started, dict(zip(clients, counts, strict=True))))
            await asyncio.sleep(max(0.0, self.period - (time.monotonic() - started)))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Sampler]:
        clients = {c: MemberClient(load_kubeconfig(self.plane.kubeconfig(c)), timeout=1.0) for c in self.clusters}
        task = asyncio.create_task(self._run(clients))
        try:
            yield self
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            for client in clients.values():
                await client.close()

    async def until(self, predicate: Callable[[Sample], bool], timeout: float) -> Sample:
        """The first sample from now on for which the predicate holds (the sampler paces the polling)."""
        seen = len(self.samples)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for sample in self.samples[seen:]:
                if predicate(sample):
                    return sample
            seen = len(self.samples)
            await asyncio.sleep(self.period / 2)
        raise AssertionError(f"timed out after {timeout}s: last samples {self.samples[-3:]}")

    def first(self, predicate: Callable[[Sample], bool]) -> Sample | None:
        return next((s for s in self.samples if predicate(s)), None)

    def assert_never_zero(self, since: float = 0.0) -> None:
        window = [s for s in self.samples if s.at >= since]
        assert len(window) >= 10, f"too few samples: {window}"
        gaps = [b.at - a.at for a, b in itertools.pairwise(window)]
        assert max(gaps) < 3.0, f"the sampler stalled for {max(gaps):.1f}s"
        zero = [s for s in window if s.total == 0]
        assert not zero, f"no ready replica of {self.name} anywhere at {zero[0]} (of {len(window)} samples)"
