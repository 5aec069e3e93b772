"""Metrics under Karmada's names: the Grafana dashboard queries only names the code defines, the
work queues and eviction queues report what they do, and `flotillactl status` shows where to scrape."""

from __future__ import annotations

import asyncio
import importlib
import json
import re

import pytest
from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock
from flotilla.cli.status import InstanceStatus, render, render_json
from flotilla.runtime.controller import Controller
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store.endpoints import Endpoint
from tests.conftest import ROOT

pytestmark = pytest.mark.timeout(10)

# Every module that defines metrics: importing them registers their names.
METRIC_MODULES = ["flotilla.runtime.metrics", "flotilla.scheduler.metrics", "services.status.metrics",
                  "services.executor.metrics", "services.eviction.history_controller", "services.eviction.graceful",
                  "services.eviction.unfinished", "services.taint_manager.evictor", "flotilla.store.informer",
                  "flotilla.store.events", "flotilla.store.leader", "flotilla.runtime.health"]
DASHBOARD = ROOT / "deploy" / "grafana" / "flotilla-failover.json"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def defined_samples() -> set[str]:
    for module in METRIC_MODULES:
        importlib.import_module(module)
    names: set[str] = set()
    for collector in list(REGISTRY._collector_to_names):
        names.update(REGISTRY._collector_to_names[collector])
    return names


def queried_names(dashboard: dict[str, object]) -> set[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]  # type: ignore[attr-defined, index]
    return {m for e in exprs for m in re.findall(r"\bflotilla_[a-z0-9_]+", e)}


def test_dashboard_queries_only_defined_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queried = queried_names(dashboard)
    assert len(queried) >= 15
    missing = sorted(queried - defined_samples())
    assert not missing, f"the dashboard queries metrics no code defines: {missing}"


def test_dashboard_has_the_failover_panels() -> None:
    titles = " ".join(p["title"].lower() for p in json.loads(DASHBOARD.read_text())["panels"])
    for panel in ("cluster ready", "eviction rate", "eviction latency", "scheduling attempts", "scheduling latency",
                  "recovery", "work queue depth"):
        assert panel in titles


def test_karmada_names_are_defined() -> None:
    names = defined_samples()
    for name in ("flotilla_cluster_ready_state", "flotilla_cluster_sync_status_duration_seconds_bucket",
                 "flotilla_cluster_probe_duration_seconds_bucket",
                 "flotilla_schedule_attempts_total", "flotilla_e2e_scheduling_duration_seconds_bucket",
                 "flotilla_scheduling_algorithm_duration_seconds_bucket", "flotilla_queue_incoming_bindings_total",
                 "flotilla_eviction_queue_depth", "flotilla_eviction_kind_total",
                 "flotilla_eviction_processing_latency_seconds_bucket", "flotilla_eviction_processing_total",
                 "flotilla_binding_sync_work_duration_seconds_bucket",
                 "flotilla_work_sync_workload_duration_seconds_bucket", "flotilla_create_resource_to_cluster_total",
                 "flotilla_update_resource_to_cluster_total", "flotilla_delete_resource_from_cluster_total",
                 "flotilla_workqueue_depth", "flotilla_workqueue_queue_duration_seconds_bucket",
                 "flotilla_workqueue_retries_total", "flotilla_failover_recovery_seconds_bucket"):
        assert name in names, name


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    async def reconcile(self, key: str) -> None:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("first try fails")


async def test_work_and_eviction_queues_report_depth_latency_retries_and_results() -> None:
    name = "test-eviction-queue"
    queue = WorkQueue(FakeClock(), name, base_backoff=0.0)
    reconciler = Failing()
    controller = Controller(name, reconciler, queue, eviction=True)
    before = {"retries": sample("flotilla_workqueue_retries_total", name=name),
              "waits": sample("flotilla_workqueue_queue_duration_seconds_count", name=name),
              "errors": sample("flotilla_eviction_processing_total", name=name, result="error"),
              "ok": sample("flotilla_eviction_processing_total", name=name, result="success")}
    controller.enqueue("ResourceBinding:default/a")
    assert sample("flotilla_workqueue_depth", name=name) == 1
    assert sample("flotilla_eviction_queue_depth", name=name) == 1
    task = asyncio.create_task(controller.run())
    async with asyncio.timeout(5):
        while reconciler.calls < 2 or sample("flotilla_eviction_processing_total", name=name, result="success") == 0:
            await asyncio.sleep(0.01)
    await controller.stop()
    await task
    assert sample("flotilla_workqueue_retries_total", name=name) == before["retries"] + 1
    assert sample("flotilla_workqueue_queue_duration_seconds_count", name=name) == before["waits"] + 2
    assert sample("flotilla_eviction_processing_total", name=name, result="error") == before["errors"] + 1
    assert sample("flotilla_eviction_processing_total", name=name, result="success") == before["ok"] + 1
    assert sample("flotilla_eviction_processing_latency_seconds_count", name=name) >= 2
    assert sample("flotilla_workqueue_depth", name=name) == 0
    assert sample("flotilla_eviction_queue_depth", name=name) == 0


def test_status_shows_metrics_address() -> None:
    statuses = [
        InstanceStatus(Endpoint("scheduler", "s-1", "10.0.0.7:50051", metrics_port=9101), "SERVING", True),
        InstanceStatus(Endpoint("sim", "sim-1", "127.0.0.1:8080"), "SERVING", False),
    ]
    header, first, second = render(statuses).splitlines()
    assert header.split()[-1] == "METRICS"
    assert first.split()[-1] == "10.0.0.7:9101" and second.split()[-1] == "-"
    items = json.loads(render_json(statuses))["items"]
    assert [i["metricsAddress"] for i in items] == ["10.0.0.7:9101", ""]
