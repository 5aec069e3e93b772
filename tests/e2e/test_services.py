"""Services as real processes: the webhook skeleton, `flotilla up/down`, `flotillactl status`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from flotilla.plane.local_plane import SERVICES, running
from flotilla.security.context import client_tls
from flotilla.security.crypto import ENV_KEY_FILE
from flotilla.security.tls import grpc_channel, process_env
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd, free_port
from flotilla.store.endpoints import Endpoint, list_endpoints
from tests.conftest import start_service, stop_service
from tests.e2e.planes import BIN

ROOT = Path(__file__).resolve().parents[2]


def test_webhook_serves_health_and_reflection(etcd: EmbeddedEtcd, tmp_path: Path) -> None:
    proc = start_service("webhook", etcd, tmp_path)
    try:
        async def check() -> list[Endpoint]:
            store = await Store.connect(etcd.endpoint)
            try:
                mine = [e for e in await list_endpoints(store, "webhook") if e.pid == proc.pid]
                async with grpc_channel(mine[0].address, client_tls()) as channel:
                    reply = await health_pb2_grpc.HealthStub(channel).Check(
                        health_pb2.HealthCheckRequest(), timeout=5)
                    assert reply.status == health_pb2.HealthCheckResponse.SERVING
                    stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
                    )
                    async for response in stream:
                        names = {s.name for s in response.list_services_response.service}
                        break
                assert {"grpc.health.v1.Health", "flotilla.v1.Webhook"} <= names
                proc.send_signal(signal.SIGTERM)
                assert await asyncio.to_thread(proc.wait, 15) == 0
                return await list_endpoints(store, "webhook")
            finally:
                await store.close()

        remaining = asyncio.run(check())
        # A clean shutdown takes the endpoint out of the registry at once.
        assert all(e.pid != proc.pid for e in remaining)
    finally:
        stop_service(proc)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_up_with_simulated_members_status_down(tmp_path: Path) -> None:
    data_dir = tmp_path / "plane"
    port = free_port()
    # No endpoint anywhere: flotillactl finds the plane through the context `up` records, and
    # with it the plane's client certificate and key file (none set in the environment).
    config = tmp_path / "config"
    env = {"XDG_CONFIG_HOME": str(config), **{name: "" for name in (*process_env(client_tls()), ENV_KEY_FILE)}}
    up = run_cli(str(BIN / "flotilla"), "up", "--detach", "--data-dir", str(data_dir), "--etcd-port", str(port),
                 "--sim-clusters", "3", "--profile", "demo", env=env)
    try:
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip().splitlines()[-1] == f"export FLOTILLA_ETCD_ENDPOINTS=https://127.0.0.1:{port}"
        assert (config / "flotilla" / "current").read_text().strip() == str(data_dir.resolve())
        assert json.loads((data_dir / "context.json").read_text())["etcd_endpoints"] == f"https://127.0.0.1:{port}"
        # `up` returned only once every member is Ready: no waiting here.
        clusters = run_cli(str(BIN / "flotillactl"), "get", "clusters", "--no-headers", env=env)
        assert [line.split()[:4] for line in clusters.stdout.splitlines()] == [
            ["member1", "v1.31.0", "Push", "True"], ["member2", "v1.31.0", "Push", "True"],
            ["member3", "v1.31.0", "Pull", "True"]], clusters.stderr
        status = run_cli(str(BIN / "flotillactl"), "status", env=env)
        assert status.returncode == 0, status.stdout + status.stderr
        header, *rows = status.stdout.strip().splitlines()
        assert header.split() == ["SERVICE", "REPLICAS", "INSTANCE", "LEADER", "HEALTH", "SHARDS", "ADDRESS",
                                  "METRICS"]
        # The executor's one replica holds both Push clusters and every bucket of keys, the eviction
        # service's, the scheduler's and the taint manager's every bucket of bindings; no other
        # service shares its work.
        shards = {r.split()[0]: r.split()[5] for r in rows}
        sharing = {"executor": "34", "eviction": "32", "scheduler": "32", "taint_manager": "32"}
        assert {s: shards[s] for s in sharing} == sharing, rows
        assert all(n == "-" for s, n in shards.items() if s not in sharing), rows
        # Every service shows where Prometheus scrapes it: the gRPC address's host, its metrics port.
        assert all(r.split()[-1].rsplit(":", 1)[0] == r.split()[-2].rsplit(":", 1)[0]
                   for r in rows if r.split()[0] in SERVICES), rows
        assert [r.split()[0] for r in rows] == sorted([*SERVICES, "sim", "agent-member3"])
        assert all("SERVING" in r for r in rows)
        fault = run_cli(str(BIN / "flotilla"), "sim", "fault", "member2", "slow", "--latency", "0.01", env=env)
        assert (fault.returncode, fault.stdout.strip()) == (0, "member2: slow"), fault.stderr
        started = json.loads((data_dir / "run.json").read_text())
        pids = [started["etcd_pid"], *started["services"].values()]
        again = run_cli(str(BIN / "flotilla"), "up", "--detach", "--data-dir", str(data_dir), env=env)
        assert again.returncode == 1 and "already running" in again.stderr
        # The refused second `up` leaves the running plane alone.
        assert (data_dir / "run.json").exists()
    finally:
        down = run_cli(str(BIN / "flotilla"), "down", "--data-dir", str(data_dir), env=env)
    assert down.returncode == 0, down.stderr
    assert not (data_dir / "run.json").exists()
    assert not (data_dir / "context.json").exists() and not (config / "flotilla" / "current").exists()
    gone = run_cli(str(BIN / "flotillactl"), "get", "clusters", env=env)
    assert gone.returncode == 1 and "run `flotilla up`" in gone.stderr
    assert not [pid for pid in pids if running(pid)], "down stops every process up started"


def test_status_names_the_unreachable_etcd() -> None:
    port = free_port()
    result = run_cli(str(BIN / "flotillactl"), "--etcd-endpoints", f"http://127.0.0.1:{port}", "status", timeout=30)
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1



def test_a_service_without_a_plane_exits_2_and_never_tries_2379(tmp_path: Path) -> None:
    """No flag, no FLOTILLA_ETCD_ENDPOINTS, no current context: one line and exit code 2 at once,
    not a connection to whatever plane listens on 127.0.0.1:2379."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    result = run_cli(sys.executable, "-m", "services.webhook", env=env, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == ["python -m services.webhook: no control plane to talk to: run `flotilla up`, "
                                          "or pass --etcd-endpoints (or set FLOTILLA_ETCD_ENDPOINTS)"]
