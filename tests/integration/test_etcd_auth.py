"""etcd with auth on, as `flotilla up` turns it on: each identity is its certificate's common
name and may do only what its role grants (flotilla.security.etcd_roles), on a real etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import aetcd.exceptions
import pytest

from flotilla.security import tls
from flotilla.store import etcd_auth
from flotilla.store.connect import make_client
from flotilla.store.embedded import EmbeddedEtcd
from tests.conftest import Security

pytestmark = pytest.mark.integration

IDENTITIES = {"webhook": "webhook", "scheduler-2": "scheduler", "status": "status", "taint_manager": "taint_manager",
              "eviction": "eviction", "executor": "executor", "sim": "sim"}
TOKEN = b"/flotilla/secrets/karmada-cluster/member1"
# (identity, an operation it may do, one it may not)
CASES = [
    ("webhook", ("put", b"/flotilla/propagationpolicies/default/p"), ("put", b"/elsewhere/x")),
    ("scheduler-2", ("put", b"/flotilla/resourcebindings/default/rb"), ("get", TOKEN)),
    ("scheduler-2", ("get", b"/flotilla/clusters/member1"), ("put", b"/flotilla/secrets/default/s")),
    ("status", ("get", TOKEN), ("put", b"/flotilla/propagationpolicies/default/p")),
    ("taint_manager", ("put", b"/flotilla/clusters/member1"), ("get", TOKEN)),
    ("eviction", ("put", b"/flotilla/clusterresourcebindings/crb"), ("put", b"/flotilla/clusters/member1")),
    ("executor", ("put", b"/flotilla/works/karmada-es-member1/w"), ("put", TOKEN)),
    ("sim", ("put", b"/flotilla/endpoints/sim/x"), ("get", b"/flotilla/clusters/member1")),
]


@pytest.fixture
async def restricted(private_etcd: EmbeddedEtcd, security: Security, tmp_path: Path
                     ) -> AsyncIterator[dict[str, aetcd.Client]]:
    authority = tls.Authority(tmp_path / "pki", "unused", security.pki / "ca.crt", security.pki / "ca.key")
    admin = make_client(private_etcd.endpoint, tls=security.client)
    await admin.connect()
    await etcd_auth.enable(admin, IDENTITIES, admins=["tester"])
    await etcd_auth.enable(admin, IDENTITIES, admins=["tester"])  # again: nothing changes
    await admin.put(TOKEN, b"token")
    await admin.put(b"/flotilla/clusters/member1", b"cluster")
    clients = {"tester": admin}
    for name in IDENTITIES:
        files = authority.issue(name, name, [], server=False, client=True)
        clients[name] = make_client(private_etcd.endpoint, tls=files)
        await clients[name].connect()
    yield clients
    for client in clients.values():
        await client.close()


async def attempt(client: aetcd.Client, operation: tuple[str, bytes]) -> bool:
    verb, key = operation
    try:
        if verb == "put":
            await client.put(key, b"x")
        else:
            await client.get(key)
    except aetcd.exceptions.ClientError as e:
        assert "permission denied" in str(e)
        return False
    return True


@pytest.mark.parametrize(("identity", "allowed", "denied"), CASES, ids=[f"{c[0]}-{c[2][1].decode()}" for c in CASES])
async def test_each_identity_may_do_its_job_and_nothing_else(
        restricted: dict[str, aetcd.Client], identity: str, allowed: tuple[str, bytes],
        denied: tuple[str, bytes]) -> None:
    assert await attempt(restricted[identity], allowed)
    assert not await attempt(restricted[identity], denied)


async def test_a_certificate_with_no_etcd_user_gets_nothing(
        restricted: dict[str, aetcd.Client], private_etcd: EmbeddedEtcd, security: Security, tmp_path: Path) -> None:
    # A Pull agent is such a certificate: it works through the plane's API, never etcd.
    stranger = tls.Authority(tmp_path / "other", "unused", security.pki / "ca.crt", security.pki / "ca.key").issue(
        "agent-member3", "agent-member3", [], server=False, client=True, groups=["system:flotilla:agents"])
    client = make_client(private_etcd.endpoint, tls=stranger)
    try:
        await client.connect()
        with pytest.raises(aetcd.exceptions.ClientError):
            await client.get(b"/flotilla/clusters/member1")
    finally:
        await client.close()
    assert await attempt(restricted["tester"], ("get", TOKEN))  # the administrator is root


async def test_flotilla_etcd_auth_turns_it_on_for_a_deployed_plane(
        private_etcd: EmbeddedEtcd, security: Security, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flotilla.plane.command import main

    args = ["etcd-auth", "--etcd-endpoints", private_etcd.endpoint, "--admin", "tester"]
    assert await asyncio.to_thread(main, args) == 0
    out = capsys.readouterr().out
    assert "etcd user taint-manager: role taint_manager" in out and "auth is on" in out
    scheduler = tls.Authority(tmp_path / "pki", "unused", security.pki / "ca.crt", security.pki / "ca.key").issue(
        "scheduler", "scheduler", [], server=False, client=True)
    client = make_client(private_etcd.endpoint, tls=scheduler)
    try:
        await client.connect()
        assert await attempt(client, ("get", b"/flotilla/clusters/member1"))
        assert not await attempt(client, ("get", TOKEN))
    finally:
        await client.close()
    # Bad input names the flag and changes nothing.
    with pytest.raises(SystemExit):
        main(["etcd-auth", "--user", "scheduler=superuser"])
    assert "role must be one of" in capsys.readouterr().err


async def test_a_serving_certificate_cannot_call_etcd(
        private_etcd: EmbeddedEtcd, security: Security, tmp_path: Path) -> None:
    """A service serves with one certificate and calls etcd with another (flotilla up issues
    both): the one it serves with is no client certificate."""
    certificates = tls.plane_certificates(tmp_path / "pki", ["scheduler"], security.pki / "ca.crt",
                                          security.pki / "ca.key", services={"scheduler": ["scheduler"]})
    calls = make_client(private_etcd.endpoint, tls=certificates["scheduler-client"])
    serves = make_client(private_etcd.endpoint, tls=certificates["scheduler"])
    try:
        await calls.connect()
        await calls.get(b"/flotilla/clusters/member1")
        with pytest.raises(aetcd.exceptions.ClientError):
            await serves.connect()
            await serves.get(b"/flotilla/clusters/member1")
    finally:
        await calls.close()
        await serves.close()
