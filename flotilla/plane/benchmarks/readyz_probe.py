"""`python -m flotilla.plane.benchmarks.readyz_probe KUBECONFIG_DIR INTERVAL [TIMEOUT [FAILED ...]]`:
ask every member's `/readyz` in turn, every INTERVAL seconds, each request given TIMEOUT seconds
(default 10), until SIGTERM; then print the latencies as JSON, over the members not named as
FAILED (failed on purpose) and per member.

A process of its own, so neither the benchmark's bookkeeping nor the control plane's services
add to what it measures: what a health probe costs the member, apart from everyone's load.

A probe that times out is counted as a latency of the timeout: a member that stops answering
must raise the percentiles, not leave them to its quicker neighbours."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import ssl
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from flotilla.plane.benchmarks.stats import summary

Target = tuple[str, str, ssl.SSLContext | None]


def named_targets(kubeconfigs: Path) -> dict[str, Target]:
    """Every kubeconfig in the directory (or the one file), by its file's name: (server, token,
    TLS context trusting its CA)."""
    found: dict[str, Target] = {}
    for path in sorted(kubeconfigs.glob("*.yaml")) if kubeconfigs.is_dir() else [kubeconfigs]:
        config: dict[str, Any] = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        ca = cluster.get("certificate-authority-data")
        tls = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
        found[path.stem] = (cluster["server"], config["users"][0]["user"]["token"], tls)
    return found


def targets(kubeconfigs: Path) -> list[Target]:
    return list(named_targets(kubeconfigs).values())


@dataclass
class Probed:
    """One member's probes: the latency of every probe answered or timed out, in milliseconds."""

    latencies: list[float] = field(default_factory=list)
    # Answers other than 200, refused or dropped connections and timeouts.
    failures: int = 0
    timeouts: int = 0

    def answered(self, ms: float, ok: bool) -> None:
        self.latencies.append(ms)
        self.failures += not ok

    def timed_out(self, timeout: float) -> None:
        self.latencies.append(timeout * 1000)
        self.failures += 1
        self.timeouts += 1

    def refused(self) -> None:
        self.failures += 1

    def report(self) -> dict[str, Any]:
        return {"probes": len(self.latencies), "failures": self.failures, "timeouts": self.timeouts,
                **summary(self.latencies, digits=2)}


def report(probed: dict[str, Probed], failed: set[str], timeout: float) -> dict[str, Any]:
    """Over every member not failed on purpose (their probes fail by design), then per member."""
    together = Probed()
    for name, member in probed.items():
        if name not in failed:
            together.latencies += member.latencies
            together.failures += member.failures
            together.timeouts += member.timeouts
    return {**together.report(), "timeout_ms": round(timeout * 1000), "left_out": sorted(failed & set(probed)),
            "members": {name: member.report() for name, member in probed.items()}}


async def probe(members: dict[str, Target], interval: float, timeout: float = 10.0,
                failed: set[str] | None = None, stop: asyncio.Event | None = None) -> dict[str, Any]:
    """Until `stop` is set (by default, until SIGTERM)."""
    probed = {name: Probed() for name in members}
    order = list(members.items())
    if stop is None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        i = 0
        while not stop.is_set() and order:
            name, (server, token, tls) = order[i % len(order)]
            i += 1
            started = time.perf_counter()
            try:
                async with session.get(f"{server}/readyz", headers={"Authorization": f"Bearer {token}"},
                                       ssl=tls if tls is not None else True) as r:
                    await r.read()
                probed[name].answered((time.perf_counter() - started) * 1000, r.status == 200)
            except TimeoutError:
                probed[name].timed_out(timeout)
            except aiohttp.ClientError:
                probed[name].refused()
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass
    return report(probed, failed or set(), timeout)


def main() -> None:
    directory, interval = Path(sys.argv[1]), float(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    print(json.dumps(asyncio.run(probe(named_targets(directory), interval, timeout, set(sys.argv[4:])))), flush=True)


if __name__ == "__main__":
    main()
