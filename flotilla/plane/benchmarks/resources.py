"""What the benchmarks read from outside the control plane: processes' CPU and memory (psutil,
and /proc for the lifetime peak), etcd's own counters from its /metrics, and how many times each
service's controllers ran, from the services' /metrics."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psutil
from prometheus_client.parser import text_string_to_metric_families

from flotilla.security.context import etcd_client_tls
from flotilla.store.base import StoreBase
from flotilla.store.endpoints import list_endpoints

MIB = 1024 * 1024

# etcd's counters that say what was written; the gauges (db size) are read as they stand.
ETCD_COUNTERS = (
    "etcd_mvcc_put_total",
    "etcd_mvcc_delete_total",
    "etcd_mvcc_txn_total",
    "etcd_mvcc_range_total",
    "etcd_disk_wal_write_bytes_total",
    "etcd_network_client_grpc_received_bytes_total",
)
ETCD_GAUGES = ("etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes")


async def etcd_metrics(endpoint: str) -> dict[str, float]:
    """etcd's counters and gauges above, summed over their labels."""
    first = endpoint.split(",")[0].rstrip("/")
    files = etcd_client_tls(first)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session, \
            session.get(f"{first}/metrics", ssl=files.client_ssl_context() if files else True) as response:
        text = await response.text()
    wanted = set(ETCD_COUNTERS) | set(ETCD_GAUGES)
    values: dict[str, float] = dict.fromkeys(wanted, 0.0)
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name_part, _, value = line.rpartition(" ")
        name = name_part.split("{", 1)[0]
        if name in wanted:
            values[name] += float(value)
    return values


def etcd_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    out = {name.removeprefix("etcd_"): after[name] - before[name] for name in ETCD_COUNTERS}
    out.update({name.removeprefix("etcd_"): after[name] for name in ETCD_GAUGES})
    return out


def lifetime_peak_rss_mib(pid: int) -> float:
    """The kernel's high-water mark of the process's resident memory (VmHWM)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class ProcessWatch:
    """CPU seconds and peak RSS of named processes over a window, RSS sampled every `period`."""

    def __init__(self, pids: dict[str, int], period: float = 0.25) -> None:
        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.period = period
        self._cpu: dict[str, float] = {}
        self.peak_rss: dict[str, int] = {}

    def _cpu_now(self, process: psutil.Process) -> float:
        try:
            times = process.cpu_times()
        except psutil.Error:
            return float("nan")
        return float(times.user + times.system)

    def _sample(self) -> None:
        for name, process in self.processes.items():
            with contextlib.suppress(psutil.Error):
                self.peak_rss[name] = max(self.peak_rss.get(name, 0), process.memory_info().rss)

    @contextlib.asynccontextmanager
    async def window(self) -> AsyncIterator[ProcessWatch]:
        self._cpu = {name: self._cpu_now(p) for name, p in self.processes.items()}
        self.peak_rss = {}

        async def sample() -> None:
            while True:
                self._sample()
                await asyncio.sleep(self.period)

        task = asyncio.create_task(sample())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._sample()
            self.cpu_s = {name: self._cpu_now(p) - self._cpu[name] for name, p in self.processes.items()}

    def report(self) -> dict[str, dict[str, float]]:
        return {name: {"cpu_s": round(self.cpu_s.get(name, float("nan")), 2),
                       "peak_rss_mib": round(self.peak_rss.get(name, 0) / MIB, 1)}
                for name in self.processes}

    def lifetime_peaks(self) -> dict[str, float]:
        return {name: round(lifetime_peak_rss_mib(p.pid), 1) for name, p in self.processes.items()}


# Each controller's passes, from the services' own metrics: the work queue's processing time
# histogram counts every key processed.
RECONCILES = "flotilla_workqueue_work_duration_seconds_count"


def reconcile_counts(text: str) -> dict[str, float]:
    """The passes of each controller in one service's Prometheus text, by work queue name."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == RECONCILES:
                counts[sample.labels["name"]] = sample.value
    return counts


async def service_metrics(store: StoreBase) -> AsyncIterator[tuple[str, str | None]]:
    """(service, its Prometheus text) of every registered service that serves metrics; the text
    is None where they could not be read."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        for endpoint in await list_endpoints(store):
            if not endpoint.metrics_address:
                continue
            text: str | None
            try:
                async with session.get(f"http://{endpoint.metrics_address}/metrics") as response:
                    text = await response.text() if response.status == 200 else None
            except (aiohttp.ClientError, TimeoutError):
                text = None
            yield endpoint.service, text


async def reconciles(store: StoreBase) -> dict[str, float]:
    """Every registered service's controller passes so far, as `service/controller`; a service
    whose metrics cannot be read is left out (the difference then leaves it out too)."""
    counts: dict[str, float] = {}
    async for service, text in service_metrics(store):
        if text is None:
            continue
        for name, value in reconcile_counts(text).items():
            counts[f"{service}/{name}"] = counts.get(f"{service}/{name}", 0.0) + value
    return counts


EVENTS_QUEUED = "flotilla_events_queued"


def queued_event_count(text: str) -> float:
    """The Events one service has recorded and not yet written, from its Prometheus text."""
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == EVENTS_QUEUED)


def total_queued(texts: list[str | None]) -> float | None:
    """The Events all services have left to write; None if any service's metrics could not be
    read, since what it has queued is unknown, not zero."""
    if any(text is None for text in texts):
        return None
    return sum(queued_event_count(text) for text in texts if text is not None)


async def events_queued(store: StoreBase) -> float | None:
    """The Events every service has recorded and not yet written (None: some service unread)."""
    return total_queued([text async for _, text in service_metrics(store)])


def per_binding(before: dict[str, float], after: dict[str, float], bindings: int) -> dict[str, float]:
    """What each counter grew by, per binding, for those that grew and were read both times."""
    return {key: round((after[key] - before[key]) / max(bindings, 1), 2)
            for key in sorted(after) if key in before and after[key] > before[key]}
