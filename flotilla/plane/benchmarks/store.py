"""Object store benchmark on a private etcd; prints one JSON object.

- creates_per_s:      sequential creates of small Cluster objects
- cas_updates_per_s:  compare-and-swap updates from 50 concurrent writers on distinct objects
- informer latency:   time from a create being issued to the informer's handler seeing
                      it (one write round trip plus watch delivery), over N objects
                      (p50/p99, milliseconds)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from flotilla.api.events import EventType
from flotilla.api.v1 import cluster_pb2
from flotilla.plane.benchmarks import arguments
from flotilla.store import Informer, Store
from flotilla.store.embedded import EmbeddedEtcd

SMOKE = {"objects": 20, "concurrency": 2, "updates": 2}


def cluster(name: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name = name
    c.spec.api_endpoint = f"https://{name}:6443"
    return c


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def bench(objects: int, concurrency: int, updates: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedEtcd(Path(tmp)) as etcd:
        store = await Store.connect(etcd.endpoint)
        seen: dict[str, float] = {}
        done = asyncio.Event()

        def on_event(kind: EventType, obj: cluster_pb2.Cluster, old: object) -> None:
            if kind == EventType.ADDED:
                seen[obj.metadata.name] = time.perf_counter()
                if len(seen) == objects:
                    done.set()

        informer = Informer(store, cluster_pb2.Cluster)
        informer.add_handler(on_event)
        task = asyncio.create_task(informer.run())
        await informer.wait_synced()

        issued: dict[str, float] = {}
        start = time.perf_counter()
        for i in range(objects):
            name = f"c{i:05d}"
            issued[name] = time.perf_counter()
            await store.create(cluster(name))
        create_s = time.perf_counter() - start
        await asyncio.wait_for(done.wait(), 120)
        latencies = [(seen[n] - issued[n]) * 1000 for n in issued]

        names = [f"c{i:05d}" for i in range(concurrency)]

        async def writer(name: str) -> int:
            obj = await store.get(cluster_pb2.Cluster, "", name)
            for n in range(updates):
                obj.metadata.annotations["n"] = str(n)
                obj = await store.update(obj)
            return updates

        start = time.perf_counter()
        total = sum(await asyncio.gather(*(writer(n) for n in names)))
        cas_s = time.perf_counter() - start

        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()
    return {
        "benchmark": "store",
        "objects": objects,
        "creates_per_s": round(objects / create_s, 1),
        "cas_concurrency": concurrency,
        "cas_updates": total,
        "cas_updates_per_s": round(total / cas_s, 1),
        "informer_latency_ms_p50": round(statistics.median(latencies), 3),
        "informer_latency_ms_p99": round(percentile(latencies, 99), 3),
    }


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--updates", type=int, default=40, help="CAS updates per writer")
    args = arguments.parse(parser, SMOKE)
    print(json.dumps(asyncio.run(bench(args.objects, args.concurrency, args.updates))))


if __name__ == "__main__":
    main()
