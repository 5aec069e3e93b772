"""One failover, one trace, at any OTLP collector (issue 12): an OTLP gRPC receiver runs in this
process (opentelemetry-proto's collector TraceService, served with grpc.aio on a free port), the plane
is started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it, member1 fails and recovers, and the
receiver must hold one trace with every step of the failover, each from the service that did it.
The same spans are in `<data-dir>/traces.jsonl`, which `flotillactl trace` reads.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from flotilla.api import keys, registry
from flotilla.store.embedded import free_port
from tests.e2e.failover_support import Plane, history
from tests.e2e.metrics_support import assert_failover_moved_every_service, assert_webhook_admitted, scrape_all
from tests.e2e.planes import flotilla_up
from tests.factories import EXAMPLES_DIR

pytestmark = pytest.mark.e2e

# Each step of a failover and the service that does it.
STEPS = {
    "detect": "flotilla-status",
    "taint": "flotilla-taint_manager",
    "toleration-wait": "flotilla-taint_manager",
    "evict": "flotilla-taint_manager",
    "reschedule": "flotilla-scheduler",
    "sync-works": "flotilla-executor",
    "apply": "flotilla-executor",
    "replicas-ready": "flotilla-eviction",
    "task-dropped": "flotilla-eviction",
    "failover-closed": "flotilla-eviction",
    "purge": "flotilla-executor",
}


def _value(value: common_pb2.AnyValue) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.spans: list[tuple[str, trace_pb2.Span, dict[str, object]]] = []

    async def Export(self, request: trace_service_pb2.ExportTraceServiceRequest,
                     context: grpc.aio.ServicerContext[object, object]) -> trace_service_pb2.ExportTraceServiceResponse:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append((str(resource.get("service.name", "")), span,
                                       {a.key: _value(a.value) for a in span.attributes}))
        return trace_service_pb2.ExportTraceServiceResponse()

    def failover(self, cluster: str) -> dict[str, set[str]]:
        """Step -> services, in the trace whose detect span names `cluster`."""
        traces = {s.trace_id for _, s, a in self.spans if a.get("flotilla.step") == "detect"
                  and a.get("flotilla.cluster") == cluster}
        if len(traces) != 1:
            return {}
        steps: dict[str, set[str]] = defaultdict(set)
        for service, span, attributes in self.spans:
            if span.trace_id in traces and "flotilla.step" in attributes:
                steps[str(attributes["flotilla.step"])].add(service)
        return dict(steps)


@pytest.mark.timeout(300)
async def test_one_failover_is_one_trace_at_an_otlp_collector_and_moves_every_metric(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    receiver = Receiver()
    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_BSP_SCHEDULE_DELAY": "200"}
    planes = flotilla_up(tmp_path_factory, 2, env=env)
    try:
        data_dir, endpoint = await asyncio.to_thread(planes.__enter__)
        plane = Plane(data_dir, endpoint)
        key = "default/nginx-deployment"
        work = f"{keys.execution_namespace('member1')}/{keys.work_name('default', 'nginx', 'Deployment')}"
        async with history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works:
            before_apply = await scrape_all(plane)
            await plane.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-divided.yaml"))

            def placed() -> list[tuple[str, int]]:
                binding = rbs.get(key)
                return [(t.name, t.replicas) for t in binding.spec.clusters] if binding else []

            def healthy() -> bool:
                binding = rbs.get(key)
                return binding is not None and bool(placed()) and all(
                    i.health == "Healthy" for i in binding.status.aggregated_status
                ) and len(binding.status.aggregated_status) == len(placed())

            await rbs.until(lambda: placed() == [("member1", 1), ("member2", 2)] and healthy(), 90,
                            "nginx on member1:1, member2:2 and Healthy")
            before = await scrape_all(plane)
            await plane.fault("member1", "down")
            await rbs.until(lambda: placed() == [("member2", 3)] and healthy()
                            and not rbs.get(key).spec.graceful_eviction_tasks, 120,  # type: ignore[union-attr]
                            "nginx on member2:3, Healthy, its eviction task dropped")
            # The same failover moves every service's metrics.
            after = await scrape_all(plane)
            assert_failover_moved_every_service(before, after)
            assert_webhook_admitted(before_apply, after)
            await plane.fault("member1", "recover")
            await works.until(lambda: works.get(work) is None, 90, "member1's old Work purged")

        deadline = time.monotonic() + 20
        while receiver.failover("member1").keys() != STEPS.keys() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        steps = receiver.failover("member1")
        assert steps == {step: {service} for step, service in STEPS.items()}, steps

        # The binding's steps are all in that one trace, none in another.
        ids = {s.trace_id for _, s, a in receiver.spans if a.get("flotilla.binding") == key}
        assert len(ids) == 1, ids
        closed = [a for _, _, a in receiver.spans if a.get("flotilla.step") == "failover-closed"]
        assert closed and float(closed[0]["flotilla.failover.rto_seconds"]) > 0  # type: ignore[arg-type]
        ready = [a for _, _, a in receiver.spans if a.get("flotilla.step") == "replicas-ready"]
        assert ready and float(ready[0]["flotilla.rto_seconds"]) > 0  # type: ignore[arg-type]

        # RPCs are traced too (OpenTelemetry's gRPC instrumentation): `flotillactl apply` went through the webhook.
        rpcs = {(service, a.get("rpc.service")) for service, _, a in receiver.spans if a.get("rpc.system") == "grpc"}
        assert ("flotilla-webhook", "flotilla.v1.Webhook") in rpcs, rpcs

        print(await plane.ok("trace", "failover", "member1", "--last", "--data-dir", str(data_dir)))
        # The span file says the same, read through flotillactl without a collector.
        shown = json.loads(await plane.ok("trace", "failover", "member1", "--last", "-o", "json",
                                          "--data-dir", str(data_dir)))
        assert {s["step"] for s in shown[0]["steps"]} == STEPS.keys(), shown
        # No step starts before the step that caused it (the taint after detect's end, ...).
        assert shown[0]["out_of_order"] == [], shown
        since = {s["step"]: s for s in shown[0]["steps"]}
        assert since["taint"]["since_fault_seconds"] >= since["detect"]["duration_seconds"], shown
        assert shown[0]["recovery_seconds"] > 0, shown
    finally:
        await asyncio.to_thread(planes.__exit__, None, None, None)
        await server.stop(None)
