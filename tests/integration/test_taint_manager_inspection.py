"""The taint manager's inspection RPC over a real gRPC server: pending evictions and protection."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import taint_manager_pb2, taint_manager_pb2_grpc
from services.taint_manager.evictor import EvictorState, Held, Pending
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from services.taint_manager.servicer import TaintManagerServicer
from tests.unit.test_taint_manager_rules import cluster


async def test_eviction_state_is_served() -> None:
    protection = EvictionProtection(FakeClock(), ProtectionConfig())
    protection.observe([cluster("a", "False", region="eu"), cluster("b", "True", region="eu"),
                        cluster("c", "True", region="us")])
    assert protection.admit("a").admitted
    state = EvictorState()
    state.pending["ResourceBinding:default/web"] = [
        Pending("ResourceBinding:default/web", "a", datetime(2026, 1, 1, 0, 10, tzinfo=UTC))]
    state.held["ResourceBinding:default/db"] = [Held("ResourceBinding:default/db", "b", "held for a test")]
    server = grpc.aio.server()
    servicer = TaintManagerServicer(state, protection, lambda: ["a"])
    taint_manager_pb2_grpc.add_TaintManagerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = await taint_manager_pb2_grpc.TaintManagerStub(channel).GetEvictionState(
                taint_manager_pb2.GetEvictionStateRequest(), timeout=5)
    finally:
        await server.stop(None)
    assert [(p.binding, p.cluster, p.deadline) for p in reply.pending] == [
        ("ResourceBinding:default/web", "a", "2026-01-01T00:10:00Z")]
    assert [(h.cluster, h.reason) for h in reply.held] == [("b", "held for a test")]
    assert [(r.region, r.clusters, r.unhealthy, r.state) for r in reply.regions] == [
        ("eu", 2, 1, "Normal"), ("us", 1, 0, "Normal")]
    assert list(reply.admitted_clusters) == ["a"] and not reply.every_cluster_unhealthy
