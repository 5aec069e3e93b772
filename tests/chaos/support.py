"""What the chaos tests share: a plane from `flotilla up` (tests/e2e/planes.py) whose processes a
test kills with SIGKILL and starts again exactly as `flotilla up` started them (command line,
environment, working directory and log file read from /proc before the kill; the new pid goes
into run.json so `flotilla down` stops it), faults set through the simulator's admin API in-process
(a `flotilla sim fault` process takes longer to start than a short outage lasts), and the checks
of a failover's end state.

Every random choice comes from one seeded generator per test; the seed is printed, and
FLOTILLA_CHAOS_SEED=<seed> repeats it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flotilla.api import keys, registry
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_NAMESPACE_PREFIX
from flotilla.cli.status import InstanceStatus, collect
from flotilla.member import MemberClient, load_kubeconfig
from flotilla.plane import simclient
from flotilla.plane.local_plane import SERVICES, RunState, running
from flotilla.plane.profiles import PROFILES
from flotilla.runtime.flags import duration
from flotilla.store import Store, StoreError
from flotilla.store.embedded import member_status, move_leader
from flotilla.store.endpoints import Endpoint, list_endpoints
from flotilla.store.leader import current_leader
from flotilla.store.shards import claims_prefix
from tests.chaos.workload import NAMESPACE, Workload
from tests.e2e.failover_support import History, Plane, placed, settled
from tests.e2e.planes import flotilla_up

# Services with a leader (the webhook answers on every replica; the executor's and the scheduler's
# replicas divide all of their work, flotilla.store.shards).
LEADING = [s for s in SERVICES if s not in ("webhook", "executor", "scheduler")]
LEASE = duration(PROFILES["demo"]["FLOTILLA_LEADER_ELECT_LEASE_DURATION"])
FAILURE_THRESHOLD = duration(PROFILES["demo"]["FLOTILLA_CLUSTER_FAILURE_THRESHOLD"])
# A failover of a few hundred bindings in the demo profile takes ~20 s on an idle machine; the
# deadlines leave room for a loaded 2-core one and for the restarts a test causes.
FAILOVER_WITHIN = 180.0


def seeded(test: str) -> random.Random:
    given = os.environ.get("FLOTILLA_CHAOS_SEED")
    seed = int(given) if given else random.SystemRandom().randrange(2**32)
    print(f"\n{test}: chaos seed {seed} (FLOTILLA_CHAOS_SEED={seed} repeats it)")
    return random.Random(seed)


@dataclass(frozen=True)
class Launch:
    """How a running process was started, read from /proc."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    log: str

    @classmethod
    def of(cls, pid: int) -> Launch:
        proc = Path(f"/proc/{pid}")
        argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        env = dict(e.decode().split("=", 1) for e in (proc / "environ").read_bytes().split(b"\0") if b"=" in e)
        return cls(argv, env, os.readlink(proc / "cwd"), os.readlink(proc / "fd" / "1"))

    def start(self) -> int:
        """Start it again, detached as `flotilla up --detach` leaves it: through a shell that exits at
        once, so init (not this test) is its parent and reaps it when `flotilla down` stops it."""
        shell = subprocess.run(["sh", "-c", 'log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!',
                                "sh", self.log, *self.argv],
                               env=self.env, cwd=self.cwd, capture_output=True, text=True, check=True,
                               start_new_session=True)
        return int(shell.stdout.strip())


@dataclass
class ChaosPlane:
    plane: Plane

    @property
    def endpoints(self) -> str:
        return self.plane.endpoint

    @property
    def data_dir(self) -> Path:
        return self.plane.data_dir

    def state(self) -> RunState:
        state = RunState.load(self.data_dir)
        assert state is not None, f"no run.json in {self.data_dir}"
        return state

    async def kill(self, pid: int) -> Launch:
        """SIGKILL the process, once it is gone; how to start it again."""
        launch = Launch.of(pid)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while running(pid):
            assert time.monotonic() < deadline, f"process {pid} still there 30s after SIGKILL"
            # Another process's exit (and init reaping it) gives this one no event to await: poll.
            await asyncio.sleep(0.02)
        return launch

    def restart(self, pid: int, launch: Launch) -> int:
        """Start a killed process again as it was started, in run.json in its place; its new pid."""
        new = launch.start()
        state = self.state()
        state.services = {n: new if p == pid else p for n, p in state.services.items()}
        state.etcd_pids = [new if p == pid else p for p in state.etcd_pids]
        state.etcd_pid = new if state.etcd_pid == pid else state.etcd_pid
        state.save(self.data_dir)
        return new

    async def statuses(self) -> list[InstanceStatus]:
        store = await Store.connect(self.endpoints)
        try:
            return await collect(store)
        finally:
            await store.close()

    async def leader(self, service: str) -> Endpoint | None:
        """The leading instance's registration; None while none leads, or while etcd elects its own
        leader (it answers "leader changed" meanwhile)."""
        store = await Store.connect(self.endpoints)
        try:
            identity = await current_leader(store, service)
            found = {e.id: e for e in await list_endpoints(store, service)}
        except StoreError:
            return None
        finally:
            await store.close()
        return found.get(identity) if identity else None

    async def shard_holder(self, service: str, shard: str) -> Endpoint | None:
        """The instance holding the shard of the service's shared work (flotilla.store.shards)."""
        store = await Store.connect(self.endpoints)
        try:
            claim = await store.kv_get(f"{claims_prefix(service)}{shard}")
            found = {e.id: e for e in await list_endpoints(store, service)}
        except StoreError:
            return None
        finally:
            await store.close()
        return found.get(claim.value.decode()) if claim is not None else None

    async def etcd_leader_first(self) -> int:
        """Make the first etcd member the leader, and its pid: the member every client dials first
        (gRPC's pick_first), so killing it takes away both etcd's leader and the services' connection."""
        state = self.state()
        urls = state.etcd_endpoints.split(",")
        first = await member_status(urls[0])
        assert first is not None, f"etcd member {urls[0]} does not answer"
        if first["leader"] != first["member_id"]:
            statuses = [await member_status(url) for url in urls]
            leader = urls[[(s or {}).get("member_id") for s in statuses].index(first["leader"])]
            await move_leader(leader, first["member_id"])
        deadline = time.monotonic() + 30
        while (status := await member_status(urls[0])) is None or status["leader"] != status["member_id"]:
            assert time.monotonic() < deadline, f"etcd leadership not moved to {urls[0]}: {status}"
            # etcd hands leadership over on its own time: poll its status.
            await asyncio.sleep(0.05)
        return state.etcd_pids[0]

    async def fault(self, cluster: str, fault: str, latency: float | None = None) -> None:
        store = await Store.connect(self.endpoints)
        try:
            sims = await list_endpoints(store, "sim")
        finally:
            await store.close()
        await simclient.set_fault(sims[0].address, cluster, fault, latency=latency, data_dir=sims[0].extra["data_dir"])

    async def apply(self, workload: Workload, tmp_path: Path) -> Path:
        path = tmp_path / f"{workload.tag}.yaml"
        path.write_text(workload.documents())
        await self.plane.ok("apply", "-f", str(path), timeout=300)
        return path

    async def member_copies(self, workload: Workload, clusters: list[str]) -> dict[str, list[str]]:
        """Each of the workload's Deployments -> the members holding it, straight from the members."""
        copies: dict[str, list[str]] = {name: [] for name in workload.names}
        for cluster in clusters:
            client = MemberClient(load_kubeconfig(self.plane.kubeconfig(cluster)), timeout=10.0)
            try:
                items = await client.list("apps/v1", "Deployment", NAMESPACE)
            finally:
                await client.close()
            for item in items:
                name = item["metadata"]["name"]
                if name in copies:
                    copies[name].append(cluster)
        return copies

    async def works(self, workload: Workload) -> dict[str, list[str]]:
        """Each of the workload's Deployments -> the clusters it has a Work for."""
        names = {keys.work_name(NAMESPACE, n, "Deployment"): n for n in workload.names}
        found: dict[str, list[str]] = {n: [] for n in workload.names}
        store = await Store.connect(self.endpoints)
        try:
            for work in (await store.list(registry.WORK)).items:
                name = names.get(work.metadata.name)
                if name and work.metadata.namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
                    found[name].append(work.metadata.namespace.removeprefix(EXECUTION_NAMESPACE_PREFIX))
        finally:
            await store.close()
        return found


@contextlib.contextmanager
def chaos_plane(tmp_path_factory: pytest.TempPathFactory, *flags: str) -> Iterator[ChaosPlane]:
    """`flotilla up --sim-clusters 3 --profile demo FLAGS`, with every etcd endpoint it serves.
    `flotilla down` stops what run.json names, the restarted processes included."""
    with flotilla_up(tmp_path_factory, 3, *flags) as (data_dir, _first):
        state = RunState.load(data_dir)
        assert state is not None
        yield ChaosPlane(Plane(data_dir, state.etcd_endpoints))


# -- the end state ----------------------------------------------------------------------------

def moves(rbs: History[work_pb2.ResourceBinding], key: str) -> list[list[tuple[str, int]]]:
    """The binding's successive placements (none while it is between clusters)."""
    seen = [placed(v.obj) for v in rbs.of(key)]
    return [p for p, _ in itertools.groupby(p for p in seen if p)]


def all_on(rbs: History[work_pb2.ResourceBinding], workload: Workload, cluster: str) -> bool:
    return all(placed(rbs.get(k)) == [(cluster, 1)] and not rbs.get(k).spec.graceful_eviction_tasks  # type: ignore[union-attr]
               for k in workload.keys)


def split(rbs: History[work_pb2.ResourceBinding], workload: Workload) -> dict[str, list[str]]:
    """Cluster -> the workload's bindings placed there."""
    where: dict[str, list[str]] = {}
    for key in workload.keys:
        for cluster, _ in placed(rbs.get(key)):
            where.setdefault(cluster, []).append(key)
    return where


async def until(check: Callable[[], Awaitable[object]], timeout: float, what: str, period: float = 0.5) -> None:
    """Re-run an async check (True, or what is wrong) that reads other processes' state, which
    gives no event to await, until it holds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = await check()
        if last is True:
            return
        await asyncio.sleep(period)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}: last {last!r}")


async def assert_failed_over_once(chaos: ChaosPlane, rbs: History[work_pb2.ResourceBinding],
                                  clusters: History[cluster_pb2.Cluster], workload: Workload,
                                  before: dict[str, list[str]], failed: str, survivor: str) -> None:
    """The end state of a clean failover of `failed`, after it recovers: every binding on `survivor`
    alone, no eviction task; each binding that was on `failed` moved once, the others never; each
    Deployment in exactly one member (the survivor) with one Work; every instance SERVING."""
    await rbs.until(lambda: all_on(rbs, workload, survivor), FAILOVER_WITHIN,
                    f"every binding on {survivor} alone, no eviction task")
    await chaos.fault(failed, "recover")
    await clusters.until(lambda: settled(clusters.get(failed)), 120, f"{failed} Ready and untainted")
    for key in workload.keys:
        expected = [[(failed, 1)], [(survivor, 1)]] if key in before.get(failed, []) else [[(survivor, 1)]]
        assert moves(rbs, key) == expected, f"{key} moved {moves(rbs, key)}"
    members = ["member1", "member2", "member3"]

    async def each_once() -> bool | dict[str, list[str]]:
        copies = await chaos.member_copies(workload, members)
        wrong = {n: c for n, c in copies.items() if c != [survivor]}
        return True if not wrong else wrong

    async def one_work() -> bool | dict[str, list[str]]:
        works = await chaos.works(workload)
        wrong = {n: c for n, c in works.items() if c != [survivor]}
        return True if not wrong else wrong

    await until(one_work, 120, f"one Work per Deployment, for {survivor}")
    await until(each_once, 120, f"each Deployment once, in {survivor}")

    async def all_serving() -> bool | list[tuple[str, str, str]]:
        statuses = await chaos.statuses()
        leaders = {s.endpoint.service for s in statuses if s.leader}
        bad = [(s.endpoint.service, s.endpoint.id, s.health) for s in statuses if s.health != "SERVING"]
        return True if not bad and set(LEADING) <= leaders else bad

    # A killed instance's registration outlives it by the endpoint TTL.
    await until(all_serving, 60, "every instance SERVING and every service led")


@contextlib.asynccontextmanager
async def applied(chaos: ChaosPlane, workload: Workload, tmp_path: Path,
                  rbs: History[work_pb2.ResourceBinding]) -> AsyncIterator[dict[str, list[str]]]:
    """The workload applied and placed (cluster -> its bindings); deleted on leaving."""
    path = await chaos.apply(workload, tmp_path)
    try:
        await rbs.until(lambda: all(placed(rbs.get(k)) for k in workload.keys), 120,
                        f"{workload.count} bindings placed")
        yield split(rbs, workload)
    finally:
        await chaos.plane.ctl("delete", "-f", str(path), timeout=300)
