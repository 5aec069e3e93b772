"""`python -m sim` as a process: kubeconfigs, registration in etcd as service "sim", CRDs from
--crds, the admin API found through etcd, and a clean exit on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flotilla.member import Health, MemberClient, load_kubeconfig
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd, free_port
from flotilla.store.endpoints import Endpoint, list_endpoints
from sim import admin

pytestmark = pytest.mark.timeout(30)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def sim_process(etcd: EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    log = open(tmp_path / "sim.log", "wb")  # noqa: ASYNC230 - opening a local log file does not block
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sim", "--port", str(free_port()), "--names", "east,west",
        "--data-dir", str(tmp_path / "data"), "--etcd-endpoints", etcd.endpoint, "--pod-ready-delay", "100ms",
        "--nodes", "2", "--crds", "flink.apache.org/v1beta1/FlinkDeployment",
        cwd=ROOT, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        log.close()


async def registered(store: Store, proc: asyncio.subprocess.Process) -> Endpoint:
    # A child process gives no signal to await: poll etcd until it has registered.
    async with asyncio.timeout(20):
        while True:
            found = [e for e in await list_endpoints(store, "sim") if e.pid == proc.pid]
            if found:
                return found[0]
            assert proc.returncode is None, "sim exited before registering"
            await asyncio.sleep(0.05)


async def test_sim_process_registers_and_serves(store: Store, sim_process: asyncio.subprocess.Process,
                                                tmp_path: Path) -> None:
    endpoint = await registered(store, sim_process)
    data_dir = Path(endpoint.extra["data_dir"])
    assert data_dir == (tmp_path / "data").resolve()
    assert endpoint.address.startswith("127.0.0.1:")

    clusters = await admin.list_clusters(endpoint.address)
    assert [c["name"] for c in clusters] == ["east", "west"]
    client = MemberClient(load_kubeconfig(data_dir / "kubeconfigs" / "east.yaml"), timeout=5)
    try:
        assert await client.health() == Health(online=True, healthy=True)
        assert len(await client.list_nodes()) == 2
        flink = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                 "metadata": {"name": "job", "namespace": "default"}, "spec": {}}
        assert (await client.apply(flink))["metadata"]["name"] == "job"
        await admin.set_fault(endpoint.address, "east", "down", data_dir=data_dir)
        assert await client.health() == Health(online=False, healthy=False)
    finally:
        await client.close()

    sim_process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(sim_process.wait(), 10) == 0
    assert [e for e in await list_endpoints(store, "sim") if e.pid == sim_process.pid] == []
