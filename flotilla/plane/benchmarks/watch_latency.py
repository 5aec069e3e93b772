"""Member status latency: a member object changes -> its Work's manifestStatus shows it.

A private etcd, an in-process simulator and the executor's execution side (ExecutionManager,
as the executor service runs it) in one process. `--deployments` Works per cluster are applied
and become Healthy; then, one change at a time, a member Deployment is scaled (its status
replicas change at once) and the time until the Work in etcd carries the new status is
measured, as seen by an informer of Works. Prints one JSON object (milliseconds).

    python -m flotilla.plane.benchmarks.watch_latency --clusters 3 --deployments 100 --changes 300
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import set_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER
from flotilla.clusterstatus.clients import MemberClients
from flotilla.member import load_kubeconfig
from flotilla.plane.benchmarks import arguments
from flotilla.rules.cluster_secrets import secret_document
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from services.executor.controllers import ExecutionManager
from sim import SimServer
from sim.catalog import builtin

DEPLOYMENT = builtin("Deployment")
SMOKE = {"clusters": 1, "deployments": 1, "changes": 2}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


async def join(store: Store, server: SimServer, name: str) -> None:
    credentials = load_kubeconfig(server.kubeconfig_path(name))
    await store.create(codec.from_dict(secret_document(name, credentials)))
    await store.create(codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"apiEndpoint": credentials.server, "syncMode": "Push",
                 "secretRef": {"namespace": "karmada-cluster", "name": name}},
    }))

    def ready(obj: cluster_pb2.Cluster) -> None:
        set_condition(obj.status.conditions, "Ready", "True", "ClusterReady", "bench", RealClock().now())

    await store.mutate(registry.CLUSTER, "", name, ready, status=True)


def work(cluster: str, name: str) -> work_pb2.Work:
    w = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    w.metadata.name, w.metadata.namespace = name, execution_namespace(cluster)
    w.metadata.finalizers.append(EXECUTION_FINALIZER)
    w.spec.workload.manifests.append(codec.raw_json(deployment(name)))
    return w


def replicas_of(w: work_pb2.Work | None) -> tuple[int, str]:
    if w is None or not w.status.manifest_statuses:
        return -1, ""
    status = w.status.manifest_statuses[0]
    return json.loads(status.status or b"{}").get("replicas", 0), status.health


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def bench(clusters: int, deployments: int, changes: int, workdir: Path) -> dict[str, Any]:
    names = [f"member{i}" for i in range(1, clusters + 1)]
    with EmbeddedEtcd(workdir / "etcd") as etcd:
        store = await Store.connect(etcd.endpoint)
        server = SimServer(RealClock(), workdir / "sim", pod_ready_delay=0.05)
        for name in names:
            server.add_cluster(name)
        await server.start()
        clients = MemberClients(store, timeout=5.0)
        manager = ExecutionManager(store, RealClock(), clients.get, lambda c: True)
        changed = asyncio.Condition()

        async def notify(*_: object) -> None:
            async with changed:
                changed.notify_all()

        manager.works.add_handler(notify)
        running = asyncio.create_task(manager.run())
        try:
            for name in names:
                await join(store, server, name)
                for i in range(deployments):
                    await store.create(work(name, f"app-{i:04d}"))
            keys = [(name, f"app-{i:04d}") for name in names for i in range(deployments)]

            def settled() -> bool:
                return all(replicas_of(manager.works.get(f"{execution_namespace(c)}/{n}")) == (1, "Healthy")
                           for c, n in keys)

            started = time.perf_counter()
            async with asyncio.timeout(300), changed:
                await changed.wait_for(settled)
            rollout_s = time.perf_counter() - started

            latencies: list[float] = []
            scale = random.Random(1)
            for _ in range(changes):
                cluster, name = scale.choice(keys)
                key = f"{execution_namespace(cluster)}/{name}"
                target = replicas_of(manager.works.get(key))[0] % 3 + 1
                began = time.perf_counter()
                server.cluster(cluster).state.update_scale(DEPLOYMENT, "default", name, {"spec": {"replicas": target}},
                                                           merge=True)

                def scaled(k: str = key, t: int = target) -> bool:
                    return replicas_of(manager.works.get(k))[0] == t

                async with asyncio.timeout(30), changed:
                    await changed.wait_for(scaled)
                latencies.append((time.perf_counter() - began) * 1000)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await clients.close()
            await server.stop()
            await store.close()
    return {"clusters": clusters, "works": len(keys), "changes": changes, "settled_s": round(rollout_s, 2),
            "latency_ms": {"p50": round(percentile(latencies, 50), 1), "p99": round(percentile(latencies, 99), 1),
                           "max": round(max(latencies), 1)}}


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--deployments", type=int, default=100, help="Works (one Deployment each) per cluster")
    parser.add_argument("--changes", type=int, default=300)
    args = arguments.parse(parser, SMOKE)
    logging.disable(logging.WARNING)  # Works retried while their cluster is joining are expected
    with tempfile.TemporaryDirectory(prefix="flotilla-watch-latency-") as tmp:
        print(json.dumps(asyncio.run(bench(args.clusters, args.deployments, args.changes, Path(tmp)))))


if __name__ == "__main__":
    main()
