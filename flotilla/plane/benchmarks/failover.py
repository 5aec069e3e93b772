"""The failover benchmark: `flotilla bench failover` and `python -m flotilla.plane.benchmarks.failover`.

etcd, every service as its own process and the simulator, started as `flotilla up` starts them;
K members joined in Push mode; N Deployments applied through the webhook, each with a
PropagationPolicy of two ordered clusterAffinities terms (its primary cluster, then one backup),
so that the victim cluster holds exactly the affected bindings and each of them has one
known place to go. Once every workload is Healthy and the services have written the Events they
had queued, the victim is failed (the simulator's `down` fault, connections dropped, or
`unreachable`, requests held until the plane's probe gives up) and every affected binding is followed
through its stages from the victim's NoExecute taint: evicted (the victim out of spec.clusters, a
graceful eviction task in), rescheduled (placed on its backup, the scheduler caught up), Healthy
there, and its task dropped. A figure is only what was observed: a stage's times and the total are
null unless every affected binding was seen through every stage.

Waits that only configure Flotilla are set to their least (no NoExecute delay to speak of, zero
toleration, a pod ready as soon as it runs) so the figures are Flotilla's own; the failure
threshold is kept (`--failure-threshold`): it is what keeps a loaded control plane from
declaring a healthy member dead, and a false failover anywhere is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flotilla.aio.tasks import cancel_and_wait
from flotilla.api import keys, registry
from flotilla.api.clusters import cluster_ready
from flotilla.api.conditions import get_condition
from flotilla.api.events import EventType
from flotilla.api.taints import EFFECT_NO_EXECUTE
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.plane.benchmarks import arguments
from flotilla.plane.benchmarks.resources import (
    ProcessWatch,
    etcd_delta,
    etcd_metrics,
    events_queued,
    per_binding,
    reconciles,
)
from flotilla.plane.benchmarks.stats import summary
from flotilla.plane.profiles import PROFILES
from flotilla.runtime import profiling
from flotilla.runtime.flags import duration
from flotilla.runtime.sharing import buckets
from flotilla.store import Informer, Store
from flotilla.store.base import WatchKind
from flotilla.store.embedded import free_port
from flotilla.store.endpoints import list_endpoints
from flotilla.store.shards import held_shards

NAMESPACE = "bench"
PAIR_LABEL = "bench-pair"
SWEEP = (10, 100, 1000)
STAGES = ("evicted", "rescheduled", "healthy", "task_dropped")
# How the victim fails, as the simulator's admin API names it: `down` drops every connection at
# once; `unreachable` holds every request, so each probe waits out the probe timeout.
FAULTS = ("down", "unreachable")
# A backlog of 1,000 Events per service is written within 20 s at the default --event-qps.
EVENTS_SETTLE_TIMEOUT = 60.0
# The write-counting watch is behind etcd by its delivery queue at most; a minute means it broke.
WRITES_CATCH_UP_TIMEOUT = 60.0
# How long the settled plane is watched before each fault, for what it spends doing nothing.
IDLE_WINDOW_S = 5.0

# The least each configured wait can be; what is left is Flotilla's own time.
FAST_WAITS = {
    # 0 would mean "never taint"; a millisecond is as good as none.
    "FLOTILLA_FAILOVER_EVICTION_TIMEOUT": "1ms",
    "FLOTILLA_DEFAULT_NOT_READY_TOLERATION_SECONDS": "0",
    "FLOTILLA_DEFAULT_UNREACHABLE_TOLERATION_SECONDS": "0",
    # Tasks must go because the new placement is Healthy, never because they aged out.
    "FLOTILLA_GRACEFUL_EVICTION_TIMEOUT": "10m",
    "FLOTILLA_POD_READY_DELAY": "0s",
    # Not waits of a failover: the demo's 3 s leader lease and 5 s endpoint TTL lapse on a loaded
    # machine, and a leader re-elected mid-failover is the election's cost, not the failover's.
    "FLOTILLA_LEADER_ELECT_LEASE_DURATION": "15s",
    "FLOTILLA_ENDPOINT_TTL": "10s",
}


class BenchError(RuntimeError):
    pass


@dataclass(frozen=True)
class Layout:
    """Which cluster each binding starts on and where it goes if that cluster fails."""

    clusters: list[str]
    victims: list[tuple[str, int]]  # (cluster, how many bindings it holds), failed in this order
    pairs: list[tuple[str, str]]  # per binding: (primary, backup)

    @staticmethod
    def plan(clusters: int, bindings: int, affected: list[int]) -> Layout:
        names = [f"member{i}" for i in range(1, clusters + 1)]
        victims = list(zip(names, affected, strict=False))
        if len(victims) < len(affected) or len(names) - len(victims) < 1:
            raise BenchError(f"--clusters: {clusters} is too few for {len(affected)} failed cluster(s) and a survivor")
        if sum(affected) > bindings:
            raise BenchError(f"--bindings: {bindings} is fewer than the {sum(affected)} bindings on failed clusters")
        survivors = names[len(victims):]
        pairs: list[tuple[str, str]] = []
        for victim, count in victims:
            pairs += [(victim, survivors[i % len(survivors)]) for i in range(count)]
        for j in range(bindings - len(pairs)):
            primary = survivors[j % len(survivors)]
            pairs.append((primary, survivors[(j + 1) % len(survivors)]))
        return Layout(names, victims, pairs)

    def node_pods(self, replicas: int, nodes: int = 3) -> int:
        """Pod slots per simulated node so that every cluster fits what ends up on it, with room."""
        failed = {v for v, _ in self.victims}
        before = Counter(primary for primary, _ in self.pairs)
        after = Counter(backup if primary in failed else primary for primary, backup in self.pairs)
        peak = max([*before.values(), *after.values()], default=0) * replicas
        return max(110, math.ceil(peak * 1.25 / nodes) + 10)


def app_name(i: int) -> str:
    return f"app-{i:05d}"


def pair_value(primary: str, backup: str) -> str:
    return f"{primary}.{backup}"


def policy_doc(primary: str, backup: str) -> dict[str, Any]:
    terms = [{"affinityName": "primary", "clusterNames": [primary]}]
    if backup != primary:
        terms.append({"affinityName": "backup", "clusterNames": [backup]})
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": f"bench-{primary}-{backup}", "namespace": NAMESPACE},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {
                         "matchLabels": {PAIR_LABEL: pair_value(primary, backup)}}}],
                     "placement": {"clusterAffinities": terms,
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def deployment_doc(i: int, primary: str, backup: str, replicas: int) -> dict[str, Any]:
    name = app_name(i)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {PAIR_LABEL: pair_value(primary, backup)}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def binding_key(i: int) -> str:
    return f"{NAMESPACE}/{app_name(i)}-deployment"


# -- what a binding's version says -------------------------------------------------------------

def healthy(rb: work_pb2.ResourceBinding | None) -> bool:
    """Placed somewhere, the scheduler caught up, and the executor reporting every target
    applied and Healthy for this very generation."""
    if rb is None or not rb.spec.clusters:
        return False
    generation = rb.metadata.generation
    if rb.status.scheduler_observed_generation != generation:
        return False
    fully = get_condition(rb.status.conditions, "FullyApplied")
    if fully is None or fully.observed_generation != generation:
        return False
    reported = {i.cluster_name for i in rb.status.aggregated_status if i.applied and i.health == "Healthy"}
    return all(t.name in reported for t in rb.spec.clusters)


@dataclass
class Followed:
    """One affected binding's stage times, in monotonic seconds. Its new place is wherever the
    scheduler puts it: a false failover during the rollout may have moved it already."""

    victim: str
    at: dict[str, float] = field(default_factory=dict)
    # Its task went while its new placement was not yet seen Healthy: the old copy was deleted
    # with no new one running, which a failover must never do.
    dropped_before_healthy: bool = False

    @property
    def complete(self) -> bool:
        return all(stage in self.at for stage in STAGES)

    def see(self, rb: work_pb2.ResourceBinding, now: float) -> None:
        targets = [t.name for t in rb.spec.clusters]
        tasked = any(t.from_cluster == self.victim for t in rb.spec.graceful_eviction_tasks)
        if "evicted" not in self.at and self.victim not in targets and tasked:
            self.at["evicted"] = now
        if "evicted" not in self.at:
            return
        if "rescheduled" not in self.at and targets and self.victim not in targets \
                and rb.status.scheduler_observed_generation == rb.metadata.generation:
            self.at["rescheduled"] = now
        if "healthy" not in self.at and self.victim not in targets and healthy(rb):
            self.at["healthy"] = now
        if "task_dropped" not in self.at and not tasked:
            self.at["task_dropped"] = now
            self.dropped_before_healthy = "healthy" not in self.at


def stage_report(followed: Iterable[Followed], taint: float | None) -> dict[str, Any]:
    """Each stage's p50/p99/max in seconds from the taint, and `total_s`, the taint to the last
    stage any binding reached; all null unless the taint was seen and every binding was seen
    through every stage, since a figure over the bindings that got there leaves out the slowest.
    `reached` says how many got to each stage, and `dropped_before_healthy` how many lost their
    task before their new placement was Healthy (it must be 0)."""
    bindings = list(followed)
    complete = taint is not None and all(f.complete for f in bindings)
    stages: dict[str, Any] = {}
    for stage in STAGES:
        times = [f.at[stage] - taint for f in bindings] if complete and taint is not None else []
        stages[stage] = {**summary(times), "reached": sum(stage in f.at for f in bindings)}
    last = max((t for f in bindings for t in f.at.values()), default=None) if complete else None
    return {"stages_complete": complete, "stages_from_taint_s": stages, "total_s": _rounded(last, taint),
            "dropped_before_healthy": sum(f.dropped_before_healthy for f in bindings)}


@dataclass
class Watcher:
    """Cluster and binding events as the benchmark sees them, timestamped on arrival."""

    victim: str = ""
    followed: dict[str, Followed] = field(default_factory=dict)
    ready_false_at: float | None = None
    taint_at: float | None = None
    # Every time a cluster not failed on purpose left Ready, with its condition.
    false_alarms: list[dict[str, Any]] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_cluster(self, kind: EventType, cluster: cluster_pb2.Cluster, _old: Any) -> None:
        now = time.monotonic()
        name = cluster.metadata.name
        ready = cluster_ready(cluster)
        if name == self.victim:
            if not ready and self.ready_false_at is None:
                self.ready_false_at = now
            if self.taint_at is None and any(t.effect == EFFECT_NO_EXECUTE for t in cluster.spec.taints):
                self.taint_at = now
        elif not ready and name not in self.failed and kind != EventType.DELETED:
            # The whole condition, not cluster_not_ready_reason: a false alarm is reported field by field.
            condition = get_condition(cluster.status.conditions, "Ready")
            self.false_alarms.append({"cluster": name, "status": condition.status if condition else "missing",
                                      "reason": condition.reason if condition else "",
                                      "message": condition.message if condition else ""})
        self.changed.set()

    async def on_binding(self, kind: EventType, rb: work_pb2.ResourceBinding, _old: Any) -> None:
        # Every binding's change wakes the rollout's wait on all of them: woken only by members'
        # status, the last report of a quiet plane waited out the whole timeout.
        self.changed.set()

    def start(self, victim: str, followed: dict[str, Followed]) -> None:
        self.victim, self.followed = victim, followed
        self.ready_false_at = self.taint_at = None

    @property
    def done(self) -> bool:
        # Every stage, not only the last: a task dropped early leaves its binding to turn Healthy.
        return all(f.complete for f in self.followed.values())


# -- the plane ---------------------------------------------------------------------------------

class Plane:
    """etcd, the services and the simulator, as `flotilla up` starts them, in a directory of ours."""

    def __init__(self, data_dir: Path, env: dict[str, str], clusters: int, node_pods: int,
                 insecure: bool = False, replicas: int = 1) -> None:
        from flotilla.plane.local_plane import LocalControlPlane

        self.local = LocalControlPlane(data_dir, None, free_port(), detach=False, extra_env=env, insecure=insecure,
                                       replicas=replicas)
        self.clusters = clusters
        self.node_pods = node_pods

    @property
    def endpoint(self) -> str:
        return self.local.endpoints

    @property
    def kubeconfigs(self) -> Path:
        return self.local.sim_dir / "kubeconfigs"

    def start(self) -> None:
        self.local.start()
        self.local._spawn("sim", "-m", "sim", "--port", str(free_port()), "--clusters", str(self.clusters),
                          "--data-dir", str(self.local.sim_dir), "--etcd-endpoints", self.endpoint,
                          "--pod-ready-delay", self.local.extra_env["FLOTILLA_POD_READY_DELAY"],
                          "--node-pods", str(self.node_pods))
        self.local.wait_serving(timeout=120)
        self.local.wait_serving_also(["sim"], timeout=120, instances=1)

    def pids(self) -> dict[str, int]:
        pids = {name: p.pid for name, p in self.local.processes.items()}
        etcd = self.local.etcd.pids if self.local.etcd is not None else []
        pids.update({"etcd" if len(etcd) == 1 else f"etcd-{i}": pid for i, pid in enumerate(etcd, 1)})
        return pids

    def stop(self) -> None:
        self.local.stop()


async def join_all(plane: Plane, names: list[str], timeout: float) -> None:
    from flotilla.cli.join import join_args, join_cluster
    from flotilla.plane.local_plane import wait_clusters_ready

    store = await Store.connect(plane.endpoint)
    try:
        for name in names:
            await join_cluster(store, join_args(name, str(plane.kubeconfigs / f"{name}.yaml")), rejoin=True)
    finally:
        await store.close()
    await wait_clusters_ready(plane.endpoint, names, timeout)


async def sim_address(store: Store) -> str:
    found = await list_endpoints(store, "sim")
    if not found:
        raise BenchError("the simulator did not register in etcd")
    return found[0].address


# -- the run -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    clusters: int
    bindings: int
    affected: list[int]
    replicas: int = 1
    timeout: float = 600.0
    failure_threshold: str = "3s"
    keep_logs: Path | None = None
    probe_interval: float = 0.05
    # ApplyBatch requests in flight during the rollout.
    in_flight: int = 2
    fault: str = "down"
    insecure: bool = False
    # Replicas of each of the plane's services, as `flotilla up --replicas`: the executor's share
    # the member clusters (each one's CPU and clusters are in the report).
    service_replicas: int = 1


async def apply_all(store: Store, docs: list[dict[str, Any]], in_flight: int) -> None:
    """Through ApplyBatch, as `flotillactl apply -f DIRECTORY` sends them: the objects of one call
    are independent of one another, so `in_flight` requests go at once."""
    from flotilla.cli.webhook_client import WebhookClient

    async with WebhookClient(store) as webhook:
        results = await webhook.apply_batch([json.dumps(doc).encode() for doc in docs], in_flight=in_flight)
    refused = [(doc, r) for doc, r in zip(docs, results, strict=True) if r.error_code or not r.response.allowed]
    if refused:
        doc, result = refused[0]
        why = result.error or "; ".join(f"{v.path}: {v.reason}" for v in result.response.violations)
        raise BenchError(f"{len(refused)} of {len(docs)} refused, {doc['kind']} {doc['metadata']['name']}: {why}")


async def until(watcher: Watcher, check: Any, timeout: float, period: float = 0.5) -> bool:
    """Whether `check()` came true within `timeout` seconds, looked at on every change (at most
    every `period` seconds: a check over ten thousand bindings is not free)."""
    deadline = time.monotonic() + timeout
    while not check():
        if not await next_change(watcher.changed, deadline):
            return False
        await asyncio.sleep(min(period, max(0.0, deadline - time.monotonic())))
    return True


async def next_change(event: asyncio.Event, deadline: float) -> bool:
    """Waits for `event` to be set anew, until `deadline` (time.monotonic()); False when the
    deadline had already passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    event.clear()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), remaining)
    return True


def failover_part(rb: work_pb2.ResourceBinding) -> bytes:
    """What a binding says besides the executor's report of its Works (aggregatedStatus and
    FullyApplied): a write that changes this is one of the failover's own."""
    copy = work_pb2.ResourceBinding()
    copy.CopyFrom(rb)
    copy.metadata.ClearField("resource_version")
    del copy.status.aggregated_status[:]
    kept = [c for c in copy.status.conditions if c.type != "FullyApplied"]
    del copy.status.conditions[:]
    copy.status.conditions.extend(kept)
    return copy.SerializeToString(deterministic=True)


@dataclass
class Writes:
    """The writes one watch has seen, by resource, and the last revision it has read."""

    counts: Counter[str] = field(default_factory=Counter)
    revision: int = 0
    closed: bool = False
    moved: asyncio.Event = field(default_factory=asyncio.Event)

    def read(self, revision: int) -> None:
        self.revision = revision
        self.moved.set()

    async def reach(self, revision: int, timeout: float) -> bool:
        """Whether the watch read up to `revision` (etcd's at the end) within `timeout`: only
        then are the counts every write up to it."""
        deadline = time.monotonic() + timeout
        while self.revision < revision and not self.closed:
            if not await next_change(self.moved, deadline):
                return False
        return self.revision >= revision


async def current_revision(store: Store) -> int:
    """etcd's revision now, from the header of a read of a prefix nothing is under."""
    got: Any = await store.client.get_prefix((keys.ETCD_ROOT + "/-bench-revision-/").encode())
    return int(got.header.revision)


async def follow_writes(store: Store, revision: int, affected: dict[str, work_pb2.ResourceBinding],
                        writes: Writes, see: Callable[[str, work_pb2.ResourceBinding], None]) -> None:
    """Every write to etcd under Flotilla's root from `revision` on, counted by resource, in one
    watch. The affected bindings (etcd key -> the version before) are decoded once each write:
    handed to `see`, and their writes split into the failover's own and the executor's reports of
    their Works. The other bindings are not decoded, and no binding informer runs beside this
    watch: it would read and decode each affected binding's writes twice, and take more of the
    machine the benchmark shares with the plane than any figure needs."""
    rt = registry.RESOURCE_BINDING
    last = {key: failover_part(rb) for key, rb in affected.items()}
    counts = writes.counts
    writes.read(revision)
    try:
        async for event in store.watch(keys.ETCD_ROOT + "/", revision + 1):
            resource = event.key.split("/")[2] if event.key.count("/") >= 2 else event.key
            counts[resource + (":delete" if event.kind == WatchKind.DELETE else "")] += 1
            if event.key in last and event.kind == WatchKind.PUT:
                rb = store.decode(rt, event.value, event.revision, event.key)
                see(event.key, rb)
                now = failover_part(rb)
                counts["affected_bindings:failover" if now != last[event.key] else "affected_bindings:work_status"] += 1
                last[event.key] = now
            writes.read(event.revision)
    finally:
        # A watch that ended (broke, or was stopped) reads no further: nobody waits on it.
        writes.closed = True
        writes.moved.set()


async def events_written(queued: Callable[[], Awaitable[float | None]], timeout: float,
                         period: float = 0.25) -> float | None:
    """Seconds until `queued()` (the Events every service has left to write) is 0, or None if it
    was not within `timeout`. None from `queued()` (a service whose metrics could not be read)
    is not settled. A rollout leaves up to 1,000 Events per service queued (written at
    --event-qps), and a failover started at once would be measured writing them: a small
    failover's CPU would go mostly to them."""
    started = time.monotonic()
    while await queued() != 0:
        if time.monotonic() - started > timeout:
            return None
        await asyncio.sleep(period)
    return round(time.monotonic() - started, 2)


async def fail_one(store: Store, watcher: Watcher, victim: str, opts: Options, pids: dict[str, int],
                   harness: dict[str, int], address: str) -> dict[str, Any]:
    from flotilla.plane import simclient

    events_settled_s = await events_written(lambda: events_queued(store), EVENTS_SETTLE_TIMEOUT)
    idle = await idle_cores(pids)
    rt = registry.RESOURCE_BINDING
    # The bindings on the victim now (a false failover during the rollout moves some away).
    # Listed afresh: the rollout's informer is gone, and each failover of a sweep needs the
    # bindings as the last one left them.
    listed = await store.list(rt, NAMESPACE)
    affected = {keys.etcd_key(rt.resource, NAMESPACE, rb.metadata.name): rb for rb in listed.items
                if any(t.name == victim for t in rb.spec.clusters)}
    followed = {key: Followed(victim) for key in affected}

    def see(etcd_key: str, rb: work_pb2.ResourceBinding) -> None:
        followed[etcd_key].see(rb, time.monotonic())
        watcher.changed.set()

    watcher.start(victim, followed)
    watcher.failed.add(victim)
    processes = ProcessWatch(pids)
    measuring = ProcessWatch(harness)
    metrics_before = await etcd_metrics(store.endpoints)
    reconciles_before = await reconciles(store)
    writes = Writes()
    counting = asyncio.create_task(follow_writes(store, listed.revision, affected, writes, see))
    load_before = os.getloadavg()
    async with processes.window(), measuring.window(), profiled(pids):
        faulted = time.monotonic()
        await simclient.set_fault(address, victim, opts.fault)
        finished = await until(watcher, lambda: watcher.done, opts.timeout)
        ended = time.monotonic()
    # Every write up to the end is in etcd; the counts are complete once the watch has read them.
    counted = await writes.reach(await current_revision(store), WRITES_CATCH_UP_TIMEOUT)
    await cancel_and_wait(counting)
    metrics_after = await etcd_metrics(store.endpoints)
    reconciles_after = await reconciles(store)
    stages = stage_report(followed.values(), watcher.taint_at)
    etcd = etcd_delta(metrics_before, metrics_after)
    evicted = sum("evicted" in f.at for f in followed.values())
    counts = writes.counts
    event_writes = sum(n for r, n in counts.items() if r.startswith("events"))

    def per_evicted(n: float, watched: bool = True) -> float | None:
        return round(n / evicted, 2) if evicted and (counted or not watched) else None

    return {
        "victim": victim, "affected": len(followed), "complete": finished and stages["stages_complete"],
        # How long the plane took to write the Events still queued before the fault (None: it had
        # not within EVENTS_SETTLE_TIMEOUT, and the failover was measured with them).
        "events_settled_s": events_settled_s,
        "fault": opts.fault,
        "detection_s": _rounded(watcher.ready_false_at, faulted),
        "taint_after_fault_s": _rounded(watcher.taint_at, faulted),
        **stages,
        "fault_to_end_s": round(ended - faulted, 3),
        "etcd": {
            **{k: round(v) for k, v in etcd.items()},
            # Whether the watch read every write up to the end; if not, what it counted is null.
            "writes_counted": counted,
            "writes_per_evicted_binding": {
                # Eviction, reschedule, history and task completion: the budget of 4.
                "binding_failover": per_evicted(counts["affected_bindings:failover"]),
                # The executor's reports of the new Works (applied, Healthy) and of the old one's.
                "binding_work_status": per_evicted(counts["affected_bindings:work_status"]),
                "events": per_evicted(event_writes),
                "all_keys": per_evicted(etcd["mvcc_put_total"] + etcd["mvcc_delete_total"], watched=False),
            },
            "writes_by_resource": dict(sorted(counts.items())) if counted else None,
        },
        "processes": processes.report(),
        # Each process's cores over the idle window before the fault: probes, collections, leases.
        # The failover's window (fault_to_end_s) pays them too, whatever the bindings.
        "idle_cores": idle,
        # What each process spent on one evicted binding (the plane's cost per binding, and where it goes).
        "cpu_ms_per_evicted_binding": cpu_ms_per_binding(processes.report(), evicted),
        # The benchmark's own processes share the machine: what they take, the plane does not get.
        "harness_processes": measuring.report(),
        # Every controller's passes over the failover, per evicted binding (a busy queue folds a
        # key added again while it waits, so a slower run can show fewer).
        "reconciles_per_evicted_binding":
            per_binding(reconciles_before, reconciles_after, evicted) if evicted else None,
        "load_average": [round(x, 2) for x in load_before],
        # Which executor replica (by process name) applied which clusters' Works, and how many
        # buckets of templates and bindings each held.
        **await shares(store, pids),
    }


async def idle_cores(pids: dict[str, int], window: float = IDLE_WINDOW_S) -> dict[str, float | None]:
    """Each process's CPU over `window` seconds of the settled plane, in cores (None if unknown)."""
    watch = ProcessWatch(pids)
    async with watch.window():
        await asyncio.sleep(window)
    return {name: round(figures["cpu_s"] / window, 3) if figures["cpu_s"] == figures["cpu_s"] else None
            for name, figures in watch.report().items()}


@contextlib.asynccontextmanager
async def profiled(pids: dict[str, int]) -> AsyncIterator[None]:
    """With FLOTILLA_CPROFILE_DIR set, each service profiles itself over the window: the rollout,
    then each failover, a file each (flotilla.runtime.profiling); otherwise nothing."""
    services = [pid for name, pid in pids.items() if not name.startswith(("etcd", "sim"))]
    if not os.environ.get(profiling.ENV):
        yield
        return
    for pid in services:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGUSR1)
    try:
        yield
    finally:
        for pid in services:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR2)


async def shares(store: Store, pids: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Which members each executor replica applies Works to, and how many buckets of keys each
    replica of the executor and of the services that divide bindings by bucket holds."""
    by_pid = {pid: name for name, pid in pids.items()}
    bucket_names = set(buckets())
    held: dict[str, dict[str, list[str]]] = {}
    for service in ("executor", "scheduler", "eviction", "taint_manager"):
        shards = await held_shards(store, service) or {}
        held[service] = {by_pid.get(e.pid, e.id): shards.get(e.id, []) for e in await list_endpoints(store, service)}

    def count_buckets(replicas: dict[str, list[str]]) -> dict[str, int]:
        return {r: sum(s in bucket_names for s in shards) for r, shards in replicas.items()}

    return {"executor_shards": {r: [s for s in shards if s not in bucket_names]
                                for r, shards in held["executor"].items()},
            **{f"{service}_buckets": count_buckets(replicas) for service, replicas in held.items()}}


def cpu_ms_per_binding(report: dict[str, dict[str, float]], evicted: int) -> dict[str, float | None]:
    """Each process's CPU milliseconds per evicted binding; None where nothing was evicted or the
    CPU time is unknown."""
    return {name: round(1000 * figures["cpu_s"] / evicted, 2) if evicted and figures["cpu_s"] == figures["cpu_s"]
            else None for name, figures in report.items()}


def _rounded(at: float | None, since: float | None) -> float | None:
    return round(at - since, 3) if at is not None and since is not None else None


async def measure(plane: Plane, layout: Layout, opts: Options, prober: subprocess.Popen[str] | None) -> dict[str, Any]:
    store = await Store.connect(plane.endpoint)
    watcher = Watcher()
    clusters = Informer(store, registry.CLUSTER)
    bindings = Informer(store, registry.RESOURCE_BINDING, namespace=NAMESPACE)
    clusters.add_handler(watcher.on_cluster)
    bindings.add_handler(watcher.on_binding)
    following = asyncio.create_task(bindings.run())
    tasks = [asyncio.create_task(clusters.run()), following]
    try:
        await clusters.wait_synced()
        await bindings.wait_synced()
        pids = plane.pids()
        harness = {"bench": os.getpid(), **({"readyz_probe": prober.pid} if prober is not None else {})}
        address = await sim_address(store)
        pairs = sorted(set(layout.pairs))
        rollout = ProcessWatch(pids)
        rollout_reconciles = await reconciles(store)
        async with rollout.window(), profiled(pids):
            started = time.monotonic()
            await apply_all(store, [policy_doc(p, b) for p, b in pairs], opts.in_flight)
            await apply_all(store, [deployment_doc(i, p, b, opts.replicas) for i, (p, b) in enumerate(layout.pairs)],
                            opts.in_flight)
            applied = time.monotonic()

            def all_healthy() -> bool:
                return all(healthy(bindings.get(binding_key(i))) for i in range(len(layout.pairs)))

            settled = await until(watcher, all_healthy, opts.timeout, period=1.0)
            healthy_at = time.monotonic()
        rollout_report: dict[str, Any] = {
            "all_healthy": settled, "apply_s": round(applied - started, 2), "healthy_s": round(healthy_at - started, 2),
            "processes": rollout.report(), "load_average": [round(x, 2) for x in os.getloadavg()],
            # Every controller's passes over the rollout, per Deployment.
            "reconciles_per_binding": per_binding(rollout_reconciles, await reconciles(store), len(layout.pairs)),
        }
        if not settled:
            rollout_report["not_healthy"] = sum(not healthy(bindings.get(binding_key(i)))
                                                for i in range(len(layout.pairs)))
        # From here the failovers follow their bindings themselves (`follow_writes`).
        await cancel_and_wait(following)
        failovers = []
        # A few stragglers that never turn Healthy (reported above) do not void the failover.
        if settled or rollout_report["not_healthy"] <= len(layout.pairs) // 100:
            for victim, _ in layout.victims:
                failovers.append(await fail_one(store, watcher, victim, opts, pids, harness, address))
        rollout_report["lifetime_peak_rss_mib"] = rollout.lifetime_peaks()
        return {"rollout": rollout_report, "failovers": failovers,
                "false_failovers": watcher.false_alarms, "readyz_ms": _stop_prober(prober)}
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()


def keep_logs(data_dir: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    if (data_dir / "logs").is_dir():
        shutil.copytree(data_dir / "logs", into / "logs", dirs_exist_ok=True)
    if (data_dir / "traces.jsonl").is_file():
        shutil.copy2(data_dir / "traces.jsonl", into / "traces.jsonl")


def leaders_lost(logs: Path) -> dict[str, int]:
    """How many times each service lost its leadership over the run, from its log: a plane too
    busy to renew its leases is one that would fail over late, so it must be zero."""
    lost = {}
    for log in sorted(logs.glob("*.log")):
        with log.open(errors="replace") as lines:
            lost[log.stem] = sum("event=leader-lost" in line for line in lines)
    return lost


def _stop_prober(prober: subprocess.Popen[str] | None) -> dict[str, Any] | None:
    if prober is None or prober.poll() is not None:
        return None
    prober.send_signal(signal.SIGTERM)
    out, _ = prober.communicate(timeout=30)
    return dict(json.loads(out)) if out.strip() else None


def _stop_on_sigterm(*_: object) -> None:
    # As Ctrl-C does: the plane is stopped and its directory removed on the way out.
    raise KeyboardInterrupt


def run(opts: Options) -> dict[str, Any]:
    layout = Layout.plan(opts.clusters, opts.bindings, opts.affected)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    env = {**PROFILES["demo"], **FAST_WAITS, "FLOTILLA_CLUSTER_FAILURE_THRESHOLD": opts.failure_threshold}
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-failover-") as tmp:
        plane = Plane(Path(tmp), env, opts.clusters, layout.node_pods(opts.replicas), opts.insecure,
                      opts.service_replicas)
        prober: subprocess.Popen[str] | None = None
        try:
            plane.start()
            asyncio.run(join_all(plane, layout.clusters, opts.timeout))
            # Each probe is given the plane's own probe timeout: one that times out is what the
            # plane's prober would have seen fail, and is counted at the timeout.
            prober = subprocess.Popen([sys.executable, "-m", "flotilla.plane.benchmarks.readyz_probe",
                                       str(plane.kubeconfigs), str(opts.probe_interval),
                                       str(duration(env["FLOTILLA_CLUSTER_PROBE_TIMEOUT"])),
                                       *(victim for victim, _ in layout.victims)],
                                      stdout=subprocess.PIPE, text=True)
            measured = asyncio.run(measure(plane, layout, opts, prober))
            measured["leaders_lost"] = leaders_lost(Path(tmp) / "logs")
        finally:
            if prober is not None and prober.poll() is None:
                prober.kill()
                prober.wait()
            plane.stop()
            if opts.keep_logs is not None:
                keep_logs(Path(tmp), opts.keep_logs)
    return {"clusters": opts.clusters, "bindings": opts.bindings, "replicas": opts.replicas,
            "service_replicas": opts.service_replicas,
            "affected": [n for _, n in layout.victims], "fault": opts.fault, "insecure": opts.insecure,
            "failure_threshold": opts.failure_threshold,
            "waits": FAST_WAITS, "cpus": os.cpu_count(), "load_average_start": [round(x, 2) for x in load_start],
            **measured, "load_average_end": [round(x, 2) for x in os.getloadavg()]}


# -- the command line --------------------------------------------------------------------------

def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clusters", type=positive, default=10, help="simulated members (default %(default)s)")
    parser.add_argument("--bindings", type=positive, default=1000, help="Deployments (default %(default)s)")
    parser.add_argument("--affected", type=positive, default=None,
                        help="bindings on the failed cluster (default: a tenth of --bindings, at least 1)")
    parser.add_argument("--replicas", type=positive, default=1, help="replicas per Deployment (default %(default)s)")
    parser.add_argument("--service-replicas", type=positive, default=1, metavar="N",
                        help="replicas of each plane service, as `flotilla up --replicas N`; the report gives "
                             "each replica's CPU and the executor's clusters per replica (default %(default)s)")
    parser.add_argument("--sweep", action="store_true",
                        help="fail three clusters in turn, holding 10, 100 and 1000 bindings (as many as fit)")
    parser.add_argument("--fault", choices=FAULTS, default="down",
                        help="how the member fails: down drops every connection; unreachable holds every "
                             "request, so each health probe waits out the probe timeout (default %(default)s)")
    parser.add_argument("--failure-threshold", default="3s",
                        help="how long a member must fail its probes before it is not Ready (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                        help="give up on the rollout, and on each failover, after this long (default %(default)gs)")
    parser.add_argument("--insecure", action="store_true",
                        help="run the plane as `flotilla up --insecure` does (no TLS, no etcd auth, no RBAC): "
                             "what least privilege costs is the difference")
    parser.add_argument("--keep-logs", type=Path, default=None, metavar="DIR",
                        help="copy the services' logs and the trace file into DIR before the plane's "
                             "directory is removed")


def options(args: argparse.Namespace) -> Options:
    if args.sweep:
        affected = [n for n in SWEEP if n <= args.bindings // 2] or [max(1, args.bindings // 10)]
    else:
        affected = [args.affected or max(1, args.bindings // 10)]
    return Options(clusters=args.clusters, bindings=args.bindings, affected=affected, replicas=args.replicas,
                   timeout=args.timeout, failure_threshold=args.failure_threshold, keep_logs=args.keep_logs,
                   fault=args.fault, insecure=args.insecure, service_replicas=args.service_replicas)


def main(args: argparse.Namespace) -> int:
    print(json.dumps(run(options(args))), flush=True)
    return 0


# `python -m flotilla.plane.benchmarks.failover --smoke`: the smallest run that goes through every step.
SMOKE = {"clusters": 3, "bindings": 6, "failure_threshold": "1s", "timeout": 120.0}


def script(argv: list[str] | None = None) -> int:
    """`python -m flotilla.plane.benchmarks.failover`: the flags of `flotilla bench failover`, and `--smoke`.

        python -m flotilla.plane.benchmarks.failover --clusters 10 --bindings 1000
        python -m flotilla.plane.benchmarks.failover --clusters 100 --bindings 10000 --affected 1000
        python -m flotilla.plane.benchmarks.failover --clusters 100 --bindings 10000 --sweep
    """
    parser = arguments.parser(__doc__)
    add_arguments(parser)
    args = arguments.parse(parser, SMOKE, argv)
    return main(args)


if __name__ == "__main__":
    sys.exit(script())
