"""`python -m sim --processes 2`: clusters served from two child processes behind the parent's
admin API, and no child left behind however the parent ends."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from flotilla.member import Health, MemberClient, load_kubeconfig
from flotilla.store.embedded import free_port
from sim import admin

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def sharded(tmp_path: Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    address = f"127.0.0.1:{free_port()}"
    log = open(tmp_path / "sim.log", "wb")  # noqa: ASYNC230 - opening a local log file does not block
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sim", "--port", address.rpartition(":")[2], "--names", "east,west",
        "--processes", "2", "--data-dir", str(tmp_path / "data"), "--nodes", "1",
        cwd=ROOT, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield proc, address
    finally:
        for pid in children(proc.pid):
            _kill(pid)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        log.close()


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def running(pid: int) -> bool:
    """False once the process is gone or a zombie (an orphan's reaper may be slow to collect it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def serving(proc: asyncio.subprocess.Process, address: str) -> list[dict[str, object]]:
    # A process gives no signal to await: poll the admin API until it answers.
    async with asyncio.timeout(45):
        while True:
            assert proc.returncode is None, "sim exited before serving"
            try:
                return await admin.list_clusters(address)
            except admin.AdminError:
                await asyncio.sleep(0.1)


async def gone(pids: list[int]) -> None:
    async with asyncio.timeout(15):
        while any(running(pid) for pid in pids):
            await asyncio.sleep(0.05)


async def test_two_processes_serve_their_clusters_and_stop_with_the_parent(
        sharded: tuple[asyncio.subprocess.Process, str], tmp_path: Path) -> None:
    proc, address = sharded
    clusters = await serving(proc, address)
    assert [c["name"] for c in clusters] == ["east", "west"]
    workers = children(proc.pid)
    assert len(workers) == 2

    data = tmp_path / "data"
    kubeconfigs = data / "kubeconfigs"
    token = (data / "admin-token").read_text().strip()
    east = MemberClient(load_kubeconfig(kubeconfigs / "east.yaml"), timeout=10)
    west = MemberClient(load_kubeconfig(kubeconfigs / "west.yaml"), timeout=10)
    try:
        assert await east.health() == await west.health() == Health(online=True, healthy=True)
        assert len(await west.list_nodes()) == 1
        # Routed by the parent to the process serving west; east, in the other, is untouched.
        assert (await admin.set_fault(address, "west", "down", data_dir=data))["fault"] == "down"
        assert await west.health() == Health(online=False, healthy=False)
        assert await east.health() == Health(online=True, healthy=True)
        with pytest.raises(admin.AdminError, match="no cluster 'north'"):
            await admin.set_fault(address, "north", "down", data_dir=data)
        # The parent guards its admin API as one process does (sim/admin_api.py): it never
        # passes on a text/plain or token-less change, which it would send on as JSON with its token.
        async with aiohttp.ClientSession() as session:
            for headers, status in (({"Content-Type": "text/plain"}, 401),
                                    ({"Content-Type": "application/json"}, 401),
                                    ({"Content-Type": "text/plain", "Authorization": f"Bearer {token}"}, 415)):
                async with session.post(f"http://{address}/admin/clusters/east/fault", data=b'{"fault": "down"}',
                                        headers=headers) as response:
                    assert response.status == status
                async with session.post(f"http://{address}/admin/clusters", data=b'{"name": "x"}',
                                        headers=headers) as response:
                    assert response.status == status
        assert await east.health() == Health(online=True, healthy=True)
        assert [c["name"] for c in await admin.list_clusters(address)] == ["east", "west"]
    finally:
        await east.close()
        await west.close()

    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 20) == 0
    await gone(workers)


@pytest.mark.long  # a third process start on top of the test above
async def test_children_stop_when_the_parent_is_killed(sharded: tuple[asyncio.subprocess.Process, str]) -> None:
    proc, address = sharded
    await serving(proc, address)
    workers = children(proc.pid)
    assert len(workers) == 2
    proc.kill()
    await proc.wait()
    await gone(workers)
