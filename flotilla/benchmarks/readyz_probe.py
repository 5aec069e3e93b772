"""`python -m flotilla.benchmarks.readyz_probe KUBECONFIG_DIR INTERVAL`: ask every member's
`/readyz` in turn, every INTERVAL seconds, until SIGTERM; then print the latencies as JSON.

A process of its own, so neither the benchmark's bookkeeping nor the control plane's services
add to what it measures: what a health probe costs the member, apart from everyone's load."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from flotilla.benchmarks.stats import summary

Target = tuple[str, str, ssl.SSLContext | None]


def targets(kubeconfigs: Path) -> list[Target]:
    """(server, token, TLS context trusting its CA) of every kubeconfig in the directory (or of
    the one file)."""
    found: list[Target] = []
    for path in sorted(kubeconfigs.glob("*.yaml")) if kubeconfigs.is_dir() else [kubeconfigs]:
        config: dict[str, Any] = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        ca = cluster.get("certificate-authority-data")
        tls = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
        found.append((cluster["server"], config["users"][0]["user"]["token"], tls))
    return found


async def probe(members: list[Target], interval: float, timeout: float = 10.0) -> dict[str, Any]:
    latencies: list[float] = []
    failures = 0
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        i = 0
        while not stop.is_set() and members:
            server, token, tls = members[i % len(members)]
            i += 1
            started = time.perf_counter()
            try:
                async with session.get(f"{server}/readyz", headers={"Authorization": f"Bearer {token}"},
                                       ssl=tls if tls is not None else True) as r:
                    await r.read()
                    failures += r.status != 200
                latencies.append((time.perf_counter() - started) * 1000)
            except (aiohttp.ClientError, TimeoutError):
                failures += 1
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass
    # A member taken down on purpose fails its probes: those are counted, not timed.
    return {"probes": len(latencies), "failures": failures, **summary(latencies, digits=2)}


def main() -> None:
    directory, interval = Path(sys.argv[1]), float(sys.argv[2])
    print(json.dumps(asyncio.run(probe(targets(directory), interval))), flush=True)


if __name__ == "__main__":
    main()
