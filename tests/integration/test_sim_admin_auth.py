"""The simulator's admin API changes members only for who can read its token (issue 35 c).

What a web page in a browser on the same machine can send cross-origin without a preflight is a
POST of text/plain (a "simple" request), with no Authorization header: both are refused, 415 and
401, and the cluster is left as it was. Reads stay open (the health check). The token is written
at every start to `<data dir>/admin-token`, mode 0600; flotilla.plane.simclient finds it from the
data dir, FLOTILLA_SIM_TOKEN_FILE or the current context."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from flotilla.aio.clock import FakeClock
from flotilla.plane import simclient
from flotilla.security import context as ctx
from sim import SimServer
from tests.sim_fixtures import StartSim

FAULT = {"fault": "down"}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture(autouse=True)
def no_token_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither a token file variable nor a current context, unless a test sets one."""
    monkeypatch.delenv(simclient.ENV_TOKEN_FILE, raising=False)
    monkeypatch.setenv(ctx.ENV_CONFIG, str(tmp_path / "no-current-context"))


async def post(session: aiohttp.ClientSession, server: SimServer, path: str, body: bytes,
               content_type: str, token: str | None = None, **headers: str) -> tuple[int, Any]:
    sent = {"Content-Type": content_type, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with session.post(f"http://{server.address}{path}", data=body, headers=sent) as response:
        return response.status, await response.json(content_type=None)


async def test_the_token_is_private_and_new_at_every_start(start_sim: StartSim) -> None:
    server = await start_sim("member1")
    path = server.data_dir / "admin-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = path.read_text().strip()
    assert first == server.admin_token and len(first) >= 32
    await server.stop()
    await server.start()
    assert path.read_text().strip() == server.admin_token != first


async def test_a_cross_origin_text_plain_post_and_a_post_without_the_token_are_refused(
        start_sim: StartSim, session: aiohttp.ClientSession) -> None:
    server = await start_sim("member1")
    cluster = server.cluster("member1")
    fault = b'{"fault": "down"}'
    path = "/admin/clusters/member1/fault"
    # What a page can send from another origin: text/plain, no token (and its Origin header).
    status, answer = await post(session, server, path, fault, "text/plain", Origin="http://evil.example")
    assert status == 401 and "admin-token" in answer["error"]
    # Even with the token, only JSON: a form or text/plain body is not an admin request.
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, answer = await post(session, server, path, fault, content_type, server.admin_token)
        assert status == 415 and "application/json" in answer["error"]
    # JSON without the token, with a wrong one, with another scheme.
    for token in (None, "", "wrong", server.admin_token + "x"):
        assert (await post(session, server, path, fault, "application/json", token))[0] == 401
    status, _ = await post(session, server, path, fault, "application/json",
                           Authorization=f"Basic {server.admin_token}")
    assert status == 401
    # A new cluster is a change too.
    assert (await post(session, server, "/admin/clusters", b'{"name": "x"}', "text/plain"))[0] == 401
    assert cluster.faults.fault.value == "none" and "x" not in server.clusters

    # With the token and JSON: done.
    status, answer = await post(session, server, path, fault, "application/json", server.admin_token)
    assert status == 200 and answer["fault"] == "down"


async def test_reads_stay_open(start_sim: StartSim, session: aiohttp.ClientSession) -> None:
    server = await start_sim("member1")
    async with session.get(f"http://{server.address}/admin/clusters") as response:
        assert response.status == 200
    assert [c["name"] for c in await simclient.list_clusters(server.address)] == ["member1"]


async def test_the_client_finds_the_token_or_says_where_it_is(start_sim: StartSim, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    server = await start_sim("member1", "member2")
    with pytest.raises(simclient.AdminError, match=r"HTTP 401.*admin-token"):
        await simclient.set_fault(server.address, "member1", "down")
    # From the simulator's data dir (as its etcd record names it), or given outright.
    down = await simclient.set_fault(server.address, "member1", "down", data_dir=server.data_dir)
    assert down["fault"] == "down"
    recovered = await simclient.set_fault(server.address, "member1", "recover", token=server.admin_token)
    assert recovered["fault"] == "none"
    # From FLOTILLA_SIM_TOKEN_FILE (what local_plane.py sets for the demo and the benchmarks).
    monkeypatch.setenv(simclient.ENV_TOKEN_FILE, str(server.data_dir / "admin-token"))
    await simclient.set_app_fault(server.address, "member2", "default", "web", healthy=False)
    assert server.cluster("member2").info()["appFaults"] == [{"namespace": "default", "name": "web"}]
    added = await simclient.add_cluster(server.address, "member3")
    assert added["name"] == "member3"
    # A token file that is not there is named.
    monkeypatch.setenv(simclient.ENV_TOKEN_FILE, str(tmp_path / "nope"))
    with pytest.raises(simclient.AdminError, match=r"admin token .*nope cannot be read"):
        await simclient.set_fault(server.address, "member1", "down")


async def test_the_client_finds_the_token_of_the_current_contexts_simulator(start_sim: StartSim, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`flotilla up` runs its simulator in `<data dir>/sim` and records its address in the context."""
    plane = tmp_path / "plane"
    server = SimServer(FakeClock(), plane / "sim")
    server.add_cluster("member1")
    await server.start()
    try:
        ctx.Context(etcd_endpoints="https://127.0.0.1:1", data_dir=str(plane), sim_address=server.address).save()
        monkeypatch.setenv(ctx.ENV_CONFIG, str(tmp_path / "current"))
        ctx.set_current(plane)
        assert (await simclient.set_fault(server.address, "member1", "down"))["fault"] == "down"
        # Another simulator is not sent this one's token.
        other = await start_sim("member1")
        with pytest.raises(simclient.AdminError, match="HTTP 401"):
            await simclient.set_fault(other.address, "member1", "down")
    finally:
        await server.stop()
