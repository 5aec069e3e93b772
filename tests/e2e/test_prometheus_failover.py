"""One failover and one recovery watched by a real Prometheus (issue 37): Debian's prometheus,
started here on a free port, scrapes every service of a demo plane (each at the metrics address
the endpoint registry gives) and etcd (its /metrics, with the admin's client certificate), every
second, and evaluates the shipped rules on a time scale of seconds (tests/monitoring/rules.py,
`for_e2e`: the windows a few seconds long, every `for:` 2 s, the SLO's limit 1 s so that the
demo's failover misses it). member1 goes down and comes back: exactly the member's alert and the
failover SLO's three fire, and all of them resolve; afterwards every expression of the Grafana
dashboard returns data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from flotilla.api import registry
from flotilla.security.tls import ENV_CA
from flotilla.store import Store
from flotilla.store.embedded import free_port
from flotilla.store.endpoints import list_endpoints
from tests.e2e.failover_support import Plane, history, started_plane
from tests.factories import EXAMPLES_DIR
from tests.monitoring.rules import PROMETHEUS, dashboard_expressions, for_e2e, load_rules, needs_prometheus

pytestmark = [pytest.mark.e2e, needs_prometheus]

SERVICES = {"webhook", "status", "taint_manager", "scheduler", "eviction", "executor"}
# member1 down for longer than the (shortened) wait, and its one binding's recovery slower than
# the (shortened) SLO: the member's alert, and each of the SLO's.
EXPECTED = {"FlotillaMemberNotReady", "FlotillaFailoverSlowerThanSLO", "FlotillaFailoverSLOFastBurn",
            "FlotillaFailoverSLOSlowBurn"}


class Prometheus:
    def __init__(self, address: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.address = address
        self.process = process
        self.log = log

    def get(self, path: str, **params: str) -> Any:
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited ({self.process.returncode}): {self.log.read_text()[-2000:]}")
        url = f"http://{self.address}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())

    def query(self, expr: str) -> list[dict[str, Any]]:
        answer = self.get("/api/v1/query", query=expr)
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def firing(self) -> list[dict[str, str]]:
        """The labels of each firing alert."""
        return [a["labels"] for a in self.get("/api/v1/alerts")["data"]["alerts"] if a["state"] == "firing"]


@contextlib.contextmanager
def prometheus(config: dict[str, Any], rules: dict[str, Any], tmp: Path) -> Iterator[Prometheus]:
    assert PROMETHEUS is not None
    (tmp / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({**config, "rule_files": [str(tmp / "rules.yaml")]}))
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp / "prometheus.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address={address}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield Prometheus(address, process, log_path)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def until_none_left(left: Any, timeout: float, what: str) -> None:
    """Until `left()` (what is still missing, read off the event loop) comes back empty."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            last = await asyncio.to_thread(left)
            if not last:
                return
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: still {last!r}")


@dataclass
class Alerts:
    """Each alert seen firing, first and last (seconds since `since`), polled every 0.25 s."""

    prom: Prometheus
    since: float = field(default_factory=time.monotonic)
    seen: dict[str, tuple[float, float]] = field(default_factory=dict)

    async def run(self) -> None:
        while True:
            with contextlib.suppress(OSError):
                firing = await asyncio.to_thread(self.prom.firing)
                at = time.monotonic() - self.since
                for name in {labels["alertname"] for labels in firing}:
                    self.seen[name] = (self.seen.get(name, (at, at))[0], at)
            await asyncio.sleep(0.25)

    def timeline(self) -> str:
        return ", ".join(f"{name} {first:.1f}-{last:.1f}s" for name, (first, last) in sorted(self.seen.items()))


async def scrape_config(plane: Plane) -> dict[str, Any]:
    """A job per service (at the metrics address it registered) and one for etcd."""
    store = await Store.connect(plane.endpoint)
    try:
        endpoints = [e for e in await list_endpoints(store) if e.service in SERVICES]
    finally:
        await store.close()
    assert {e.service for e in endpoints} == SERVICES and all(e.metrics_address for e in endpoints), endpoints
    pki = plane.data_dir / "pki"
    jobs = [{"job_name": f"flotilla-{e.service}", "static_configs": [{"targets": [e.metrics_address]}]}
            for e in endpoints]
    jobs.append({"job_name": "etcd", "scheme": "https",
                 "tls_config": {"ca_file": os.environ[ENV_CA], "cert_file": str(pki / "admin.crt"),
                                "key_file": str(pki / "admin.key")},
                 "static_configs": [{"targets": [plane.endpoint.removeprefix("https://")]}]})
    return {"global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "scrape_configs": jobs}


@pytest.mark.timeout(240)
async def test_a_failover_fires_and_resolves_the_right_alerts_and_every_panel_has_data(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    started = time.monotonic()
    exprs = dashboard_expressions()
    with started_plane(tmp_path_factory, 2) as plane:
        up_in = time.monotonic() - started
        config = await scrape_config(plane)
        with prometheus(config, for_e2e(load_rules()), tmp_path) as prom:

            def unscraped() -> list[str]:
                up = {s["metric"]["job"] for s in prom.query("up == 1")}
                return sorted({job["job_name"] for job in config["scrape_configs"]} - up)

            def without_data() -> list[str]:
                return [f"{title}: {expr}" for title, expr in exprs
                        if not any(s["value"][1] != "NaN" for s in prom.query(expr))]

            await until_none_left(unscraped, 30, "every service and etcd scraped")
            # Until every target has been scraped once, a service looks absent; on a loaded machine
            # that can outlast the e2e's 2 s `for:`.
            await until_none_left(prom.firing, 30, "no alert before the failover")
            alerts = Alerts(prom)
            watching = asyncio.create_task(alerts.run())
            try:
                key = "default/nginx-deployment"
                async with history(plane, registry.RESOURCE_BINDING) as rbs:
                    await plane.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-divided.yaml"))

                    def healthy_on(*clusters: str) -> bool:
                        binding = rbs.get(key)
                        return binding is not None and [t.name for t in binding.spec.clusters] == list(clusters) and (
                            sorted(i.cluster_name for i in binding.status.aggregated_status if i.health == "Healthy")
                            == list(clusters))

                    await rbs.until(lambda: healthy_on("member1", "member2"), 90, "nginx Healthy on member1, member2")
                assert not alerts.seen, alerts.timeline()
                alerts.since = time.monotonic()
                await plane.fault("member1", "down")
                await until_none_left(lambda: EXPECTED - alerts.seen.keys(), 90, "the failover's alerts firing")
                await plane.fault("member1", "recover")
                await until_none_left(prom.firing, 60, "every alert resolved")
                resolved_at = time.monotonic() - alerts.since
                # Every panel's expression answers, member1's purged copy (the delete counter) included.
                await until_none_left(without_data, 60, "data for every dashboard expression")
                data_at = time.monotonic() - alerts.since
                [recovery] = prom.query("flotilla_failover_recovery_seconds_sum")
            finally:
                watching.cancel()
                await asyncio.gather(watching, return_exceptions=True)
    assert alerts.seen.keys() == EXPECTED, alerts.timeline()
    print(f"\nplane up in {up_in:.1f}s; after the fault: alerts firing {alerts.timeline()}, all resolved by "
          f"{resolved_at:.1f}s (recovery {float(recovery['value'][1]):.1f}s); {len(exprs)}/{len(exprs)} dashboard "
          f"expressions with data by {data_at:.1f}s; {time.monotonic() - started:.1f}s in all")
