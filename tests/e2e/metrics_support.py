"""Every service's metrics during a failover (issue 12): each service is scraped at the address
`flotillactl status -o json` gives, before and after, and the failover's series must have moved
(the webhook's, which no failover step calls, across the apply before it). Run by the OTLP test's
failover (test_tracing.py), so one failover serves both."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.failover_support import Plane

SERVICES = ["status", "taint_manager", "scheduler", "eviction", "executor", "webhook"]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(address: str) -> Samples:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape_all(plane: Plane) -> dict[str, Samples]:
    items = json.loads(await plane.ok("status", "-o", "json"))["items"]
    addresses = {i["service"]: i["metricsAddress"] for i in items if i["service"] in SERVICES}
    assert sorted(addresses) == sorted(SERVICES) and all(addresses.values()), items
    return {service: await asyncio.to_thread(scrape, address) for service, address in addresses.items()}


async def scrape_replicas(plane: Plane, service: str) -> Samples:
    """The counters of every replica of `service` added up: which replica does a piece of work
    (the one holding its cluster or bucket) is not for the test to guess."""
    items = json.loads(await plane.ok("status", "-o", "json"))["items"]
    addresses = [i["metricsAddress"] for i in items if i["service"] == service]
    assert addresses and all(addresses), items
    summed: Samples = {}
    for samples in await asyncio.gather(*(asyncio.to_thread(scrape, a) for a in addresses)):
        for key, value in samples.items():
            summed[key] = summed.get(key, 0.0) + value
    return summed


def total(samples: Samples, metric: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == metric and set(labels.items()) <= set(ls))


def assert_failover_moved_every_service(before: dict[str, Samples], after: dict[str, Samples]) -> None:
    """The series a member1-down failover must move, service by service."""

    def moved(service: str, metric: str, **labels: str) -> bool:
        return total(after[service], metric, **labels) > total(before[service], metric, **labels)

    status = after["status"]
    assert total(status, "flotilla_cluster_ready_state", member_cluster="member1") == 0
    assert total(status, "flotilla_cluster_ready_state", member_cluster="member2") == 1
    assert moved("status", "flotilla_cluster_sync_status_duration_seconds_count", member_cluster="member1")
    assert moved("status", "flotilla_cluster_probe_duration_seconds_count")
    assert moved("taint_manager", "flotilla_eviction_kind_total", member_cluster="member1")
    assert moved("taint_manager", "flotilla_eviction_processing_total", name="binding-eviction", result="success")
    assert moved("taint_manager", "flotilla_eviction_processing_latency_seconds_count", name="binding-eviction")
    assert moved("scheduler", "flotilla_schedule_attempts_total", result="scheduled")
    assert moved("scheduler", "flotilla_e2e_scheduling_duration_seconds_count")
    assert moved("scheduler", "flotilla_scheduling_algorithm_duration_seconds_count", schedule_step="Filter")
    assert moved("scheduler", "flotilla_queue_incoming_bindings_total")
    assert moved("eviction", "flotilla_workqueue_adds_total")
    assert moved("executor", "flotilla_binding_sync_work_duration_seconds_count")
    assert moved("executor", "flotilla_work_sync_workload_duration_seconds_count")
    assert moved("executor", "flotilla_workqueue_queue_duration_seconds_count")


def assert_webhook_admitted(before: dict[str, Samples], after: dict[str, Samples]) -> None:
    """The webhook's own series moved for the objects applied between the scrapes: no failover step
    calls the webhook, so its scrapes bracket the `flotillactl apply` that set the failover up."""
    metric = "flotilla_webhook_requests_total"
    assert total(after["webhook"], metric, webhook="apply", result="allowed") > \
        total(before["webhook"], metric, webhook="apply", result="allowed"), after["webhook"]
