"""Scheduler benchmark on a private etcd; prints one JSON object.

The scheduler runs as its own process (`python -m services.scheduler`, default flags) against
100 clusters and 10,000 Deployment bindings with a mix of placements: static weights over
three clusters, dynamic weights and Aggregated over a group of ten, Duplicated on two of four.

- bindings_per_s: the 10,000 bindings exist unscheduled when the scheduler starts; from its
  first result to its last. A result is spec.clusters plus the applied-placement annotation
  (one compare-and-swap), then the Scheduled condition and observed generation (a second),
  plus its Events.
- latency: one cluster fails. Like the taint manager, the benchmark evicts every binding from
  it (the cluster moves from spec.clusters to a graceful eviction task), all at once; the
  latency of a binding is from its eviction being written to its rescheduled result being
  visible in etcd (p50/p99, milliseconds), queueing behind the rest of the storm included.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flotilla.api import codec, registry
from flotilla.api.events import EventType
from flotilla.plane.benchmarks import ROOT, arguments
from flotilla.store import Informer, Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints

# The checkout, where the processes this benchmark starts run.

GROUPS = 10
FAILED = "member-000"
# No binding change for this long means the scheduler is done with the backlog.
QUIET_S = 0.5
# Two clusters in each of the GROUPS groups, so that every kind of placement can be met.
SMOKE = {"clusters": 2 * GROUPS, "bindings": 20, "phase_timeout": 45.0}


class Stalled(Exception):
    """A phase of the run did not finish in time; names the phase, with the scheduler's log."""


async def phase(event: asyncio.Event, seconds: float, what: str, workdir: Path) -> None:
    try:
        await asyncio.wait_for(event.wait(), seconds)
    except TimeoutError:
        log = (workdir / "scheduler.log").read_text(errors="replace")[-4000:]
        raise Stalled(f"{what} did not happen within {seconds:.0f} s; the scheduler's log ends:\n{log}") from None


def cluster(i: int) -> Any:
    return codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": f"member-{i:03d}", "labels": {"group": f"g{i % GROUPS}"}},
        "spec": {"provider": "sim", "region": f"region-{i % 4}", "zones": [f"zone-{i}"]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}],
            "apiEnablements": [{"groupVersion": "apps/v1",
                                "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "resourceSummary": {"allocatable": {"cpu": "2000", "memory": "8000Gi", "pods": "20000"},
                                "allocated": {"cpu": "100", "memory": "100Gi", "pods": "500"}},
        },
    })


def placement(i: int, clusters: int) -> dict[str, Any]:
    kind = i % 10
    if kind < 4:
        names = [f"member-{(i + k * 7) % clusters:03d}" for k in range(3)]
        return {"clusterAffinity": {"clusterNames": names}, "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": [name]}, "weight": w} for w, name in enumerate(names, 1)]}}}
    group = {"labelSelector": {"matchLabels": {"group": f"g{i % GROUPS}"}}}
    if kind < 7:
        return {"clusterAffinity": group, "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
    if kind < 9:
        return {"clusterAffinity": group, "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
    names = [f"member-{(i + k * 11) % clusters:03d}" for k in range(4)]
    return {"clusterAffinity": {"clusterNames": names},
            "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}],
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


def binding(i: int, clusters: int) -> Any:
    name = f"app-{i:05d}"
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": f"{name}-deployment", "namespace": "bench",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "bench-policy"}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "bench", "name": name,
                         "uid": f"00000000-0000-0000-0000-{i:012d}"},
            "replicas": [6, 10, 5, 2][[0, 0, 0, 0, 1, 1, 1, 2, 2, 3][i % 10]],
            "replicaRequirements": {"resourceRequest": {"cpu": "100m", "memory": "128Mi"}},
            "placement": placement(i, clusters),
            "schedulerName": "default-scheduler",
        },
    })


def scheduled(obj: Any) -> bool:
    return any(c.type == "Scheduled" and c.status == "True" for c in obj.status.conditions) and \
        obj.status.scheduler_observed_generation == obj.metadata.generation


def start_scheduler(endpoint: str, workdir: Path) -> subprocess.Popen[bytes]:
    with open(workdir / "scheduler.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "services.scheduler", "--etcd-endpoints", endpoint, "--metrics-port", "-1"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


async def quiet(changed: asyncio.Event) -> None:
    """Until no binding has changed for QUIET_S: the backlog's last writes have landed and been
    seen here, so the storm is measured alone."""
    while True:
        changed.clear()
        try:
            await asyncio.wait_for(changed.wait(), QUIET_S)
        except TimeoutError:
            return


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def gather_limited(limit: int, coroutines: list[Any]) -> None:
    semaphore = asyncio.Semaphore(limit)

    async def run(coroutine: Any) -> None:
        async with semaphore:
            await coroutine

    await asyncio.gather(*(run(c) for c in coroutines))


async def bench(clusters: int, bindings: int, workdir: Path, phase_timeout: float) -> dict[str, Any]:
    with EmbeddedEtcd(workdir / "etcd") as etcd:
        store = await Store.connect(etcd.endpoint)
        await gather_limited(32, [store.create(cluster(i)) for i in range(clusters)])
        await gather_limited(64, [store.create(binding(i, clusters)) for i in range(bindings)])

        done_at: dict[str, float] = {}
        # When each binding was first seen scheduled at each generation. The storm's results are
        # read from here rather than matched as they arrive: a result can reach the informer
        # before the eviction's own write has returned to us.
        scheduled_at: dict[str, dict[int, float]] = {}
        evicted_gen: dict[str, int] = {}
        first_done = asyncio.Event()
        all_done = asyncio.Event()
        storm_done = asyncio.Event()

        changed = asyncio.Event()

        def rescheduled_at(key: str) -> float | None:
            later = [t for gen, t in scheduled_at.get(key, {}).items() if gen >= evicted_gen[key]]
            return min(later) if later else None

        def check_storm() -> None:
            if evicted_gen and all(rescheduled_at(k) is not None for k in evicted_gen):
                storm_done.set()

        def on_binding(kind: EventType, obj: Any, old: Any) -> None:
            changed.set()
            if kind is EventType.DELETED or not scheduled(obj):
                return
            key = obj.metadata.name
            now = time.perf_counter()
            scheduled_at.setdefault(key, {}).setdefault(obj.metadata.generation, now)
            if key not in done_at:
                done_at[key] = now
                first_done.set()
                if len(done_at) == bindings:
                    all_done.set()
            elif evicting_done.is_set():
                check_storm()

        evicting_done = asyncio.Event()
        informer = Informer(store, registry.RESOURCE_BINDING)
        informer.add_handler(on_binding)
        watching = asyncio.create_task(informer.run())
        await informer.wait_synced()

        started = time.perf_counter()
        proc = start_scheduler(etcd.endpoint, workdir)
        try:
            await phase(first_done, phase_timeout, "the scheduler's first result", workdir)
            first = min(done_at.values())
            await phase(all_done, phase_timeout, "every binding scheduled", workdir)
            last = max(done_at.values())
            backlog_s = last - first

            try:
                await asyncio.wait_for(quiet(changed), phase_timeout)
            except TimeoutError:
                raise Stalled(f"the bindings still changed after {phase_timeout:.0f} s") from None

            # The storm: every binding on FAILED evicted from it at once.
            victims = [b for b in informer.list() if any(t.name == FAILED for t in b.spec.clusters)]
            issued: dict[str, float] = {}

            async def evict(target: Any) -> None:
                def change(obj: Any) -> bool:
                    kept = [t for t in obj.spec.clusters if t.name != FAILED]
                    gone = [t for t in obj.spec.clusters if t.name == FAILED]
                    del obj.spec.clusters[:]
                    obj.spec.clusters.extend(kept)
                    for t in gone:
                        obj.spec.graceful_eviction_tasks.add(from_cluster=t.name, replicas=t.replicas,
                                                             reason="TaintUntolerated", producer="TaintManager")
                    return True

                written = await store.mutate(registry.RESOURCE_BINDING, "bench", target.metadata.name, change)
                evicted_gen[target.metadata.name] = written.metadata.generation
                issued[target.metadata.name] = time.perf_counter()

            storm_start = time.perf_counter()
            await gather_limited(64, [evict(v) for v in victims])
            evicting_done.set()
            check_storm()
            await phase(storm_done, phase_timeout, "every evicted binding rescheduled", workdir)
            storm_seen = {k: t for k in issued if (t := rescheduled_at(k)) is not None}
            storm_s = max(storm_seen.values()) - storm_start
            # A result can land before the eviction's own write returned to us; count it as 0.
            latencies = [max(storm_seen[k] - issued[k], 0.0) * 1000 for k in issued]
            endpoints = await list_endpoints(store, "scheduler")
        finally:
            proc.terminate()
            proc.wait(30)
            watching.cancel()
            await store.close()
        return {
            "benchmark": "schedule",
            "clusters": clusters,
            "bindings": bindings,
            "bindings_per_s": round(bindings / backlog_s, 1),
            "backlog_s": round(backlog_s, 2),
            "startup_to_first_result_s": round(first - started, 2),
            "storm_bindings": len(victims),
            "storm_bindings_per_s": round(len(victims) / storm_s, 1),
            "latency_ms_p50": round(percentile(latencies, 50), 1),
            "latency_ms_p99": round(percentile(latencies, 99), 1),
            "scheduler_replicas": len(endpoints),
            "cpus": os.cpu_count(),
        }


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--bindings", type=int, default=10_000)
    parser.add_argument("--phase-timeout", type=float, default=600.0,
                        help="seconds each phase (first result, backlog, storm) may take before the run fails")
    args = arguments.parse(parser, SMOKE)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            print(json.dumps(asyncio.run(bench(args.clusters, args.bindings, Path(tmp), args.phase_timeout))))
        except Stalled as stalled:
            sys.exit(f"schedule: {stalled}")


if __name__ == "__main__":
    main()
