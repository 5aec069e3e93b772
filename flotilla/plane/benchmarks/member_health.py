"""First health round over many simulated members; prints one JSON object.

One in-process simulator serves N clusters, each on its own HTTPS port with the simulator's CA.
A MemberClient per cluster is built from its kubeconfig (as the status service does), then every
cluster is probed once, concurrently: the first round pays for building each client (its TLS
context) and for each TLS handshake.

- build_ms: building the N clients from their kubeconfigs.
- first_round_ms / second_round_ms: one concurrent health probe of every cluster; the first
  builds each client's session (its TLS context, on first use) and pays for each TLS handshake,
  the second reuses the connections of the first.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.member import MemberClient, load_kubeconfig
from flotilla.plane.benchmarks import arguments
from sim import SimServer

SMOKE = {"clusters": 2}


async def bench(clusters: int, data_dir: Path) -> dict[str, Any]:
    server = SimServer(RealClock(), data_dir, nodes=1)
    names = [f"member-{i:03d}" for i in range(clusters)]
    for name in names:
        server.add_cluster(name)
    started = time.perf_counter()
    await server.start()
    start_ms = (time.perf_counter() - started) * 1000
    try:
        started = time.perf_counter()
        clients = [MemberClient(load_kubeconfig(server.kubeconfig_path(n)), timeout=10) for n in names]
        build_ms = (time.perf_counter() - started) * 1000
        rounds = []
        for _ in range(2):
            started = time.perf_counter()
            healths = await asyncio.gather(*(c.health() for c in clients))
            rounds.append((time.perf_counter() - started) * 1000)
            assert all(h.healthy for h in healths)
        for client in clients:
            await client.close()
    finally:
        await server.stop()
    return {"clusters": clusters, "sim_start_ms": round(start_ms, 1), "build_ms": round(build_ms, 1),
            "first_round_ms": round(rounds[0], 1), "second_round_ms": round(rounds[1], 1)}


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--clusters", type=int, default=100)
    args = arguments.parse(parser, SMOKE)
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(asyncio.run(bench(args.clusters, Path(tmp)))))


if __name__ == "__main__":
    main()
