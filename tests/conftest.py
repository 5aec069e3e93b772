"""Shared fixtures: a real etcd on a free port with its own data dir, and stores on it;
an in-memory store for reconciler tests that do not test etcd itself.

The suite runs the default, secure path: every etcd a fixture starts requires client
certificates, every service it starts serves mutual TLS, and Secrets are encrypted, all with
a CA and key file of the session (`security`), which the FLOTILLA_TLS_*, FLOTILLA_ETCD_* and
FLOTILLA_ENCRYPTION_KEY_FILE variables hand to every process a test starts. Planes
(tests/e2e/planes.py) sign their certificates with the same CA."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flotilla.api.owners import SERVICES
from flotilla.security.crypto import ENV_KEY_FILE, new_key_file
from flotilla.security.rbac import MASTERS
from flotilla.security.tls import (
    LOOPBACK,
    Authority,
    TLSFiles,
    plane_certificates,
    process_env,
    service_server_name,
)
from flotilla.store import MemoryStore, Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import ENDPOINTS_PREFIX, list_endpoints
from flotilla.store.leader import ELECTION_PREFIX
from flotilla.store.shards import SHARDS_PREFIX
from services.taint_manager.admissions import PREFIX as ADMISSIONS_PREFIX
from tests.cli_runner import flotillactl

ROOT = Path(__file__).resolve().parents[1]

# The simulator's fixtures (start_sim, member_client, ...) for every test module.
pytest_plugins = ["tests.sim_fixtures"]


@dataclass
class Security:
    pki: Path
    etcd: TLSFiles
    client: TLSFiles
    key_file: Path


@pytest.fixture(scope="session", autouse=True)
def security(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Security]:
    pki = tmp_path_factory.mktemp("pki")
    certificates = plane_certificates(pki, ["etcd"])
    # The tests call as an administrator (system:masters), as `flotilla up`'s admin certificate
    # does, and the same certificate serves every service a test starts: one for both uses.
    tester = Authority(pki, "flotilla-ca").issue(
        "tester", "tester", [*LOOPBACK, *(service_server_name(s) for s in (*SERVICES, "sim"))], groups=[MASTERS])
    key_file = new_key_file(pki / "encryption-keys.yaml")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**process_env(tester), ENV_KEY_FILE: str(key_file)}.items():
            patch.setenv(name, value)
        yield Security(pki, certificates["etcd"], tester, key_file)


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory, security: Security) -> Iterator[EmbeddedEtcd]:
    """One etcd for the session; `store` wipes Flotilla's keys before each test."""
    server = EmbeddedEtcd(tmp_path_factory.mktemp("etcd"), tls=security.etcd)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_etcd(tmp_path: Path, security: Security) -> Iterator[EmbeddedEtcd]:
    """An etcd of this test's own, for tests that stop, restart or compact it."""
    server = EmbeddedEtcd(tmp_path / "etcd", tls=security.etcd)
    server.start()
    yield server
    server.stop()


async def wipe_objects(store: Store) -> None:
    """Delete every object, keeping the registrations of services a fixture started (their
    endpoints, elections and shards, not the taint manager's admissions of clusters)."""
    keep = (ENDPOINTS_PREFIX.encode(), ELECTION_PREFIX.encode(), SHARDS_PREFIX.encode())
    for kv in await store.client.get_prefix(b"/flotilla/"):
        # An admission is of a cluster, which goes with the objects.
        if not kv.key.startswith(keep) or kv.key.startswith(ADMISSIONS_PREFIX.encode()):
            await store.client.delete(kv.key)


@pytest.fixture
async def store(etcd: EmbeddedEtcd) -> AsyncIterator[Store]:
    s = await Store.connect(etcd.endpoint)
    await wipe_objects(s)
    yield s
    await s.close()


@pytest.fixture
async def memory_store() -> AsyncIterator[MemoryStore]:
    """A store of this test's own in this process's memory: same CAS, finalizer and watch
    semantics as `store` (tests/integration/test_store_contract.py), no etcd."""
    s = MemoryStore()
    yield s
    await s.close()


@pytest.fixture
async def private_store(private_etcd: EmbeddedEtcd) -> AsyncIterator[Store]:
    s = await Store.connect(private_etcd.endpoint)
    yield s
    await s.close()


def start_service(name: str, etcd: EmbeddedEtcd, data_dir: Path, *args: str,
                  registers_as: str = "") -> subprocess.Popen[bytes]:
    """Start `python -m services.<name>` and return once it is registered in etcd
    (as `registers_as`, when that differs from the module name)."""
    log = open(data_dir / f"{name}.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", f"services.{name}", "--etcd-endpoints", etcd.endpoint,
         "--metrics-port", "-1", "--data-dir", str(data_dir), *args],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )

    async def registered() -> None:
        s = await Store.connect(etcd.endpoint)
        try:
            async with asyncio.timeout(30):
                while not any(e.pid == proc.pid for e in await list_endpoints(s, registers_as or name)):
                    if proc.poll() is not None:
                        raise RuntimeError(f"{name} exited: {(data_dir / f'{name}.log').read_text()[-2000:]}")
                    await asyncio.sleep(0.05)
        finally:
            await s.close()

    asyncio.run(registered())
    return proc


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def webhook(etcd: EmbeddedEtcd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    """The webhook service, running as its own process against the session etcd."""
    proc = start_service("webhook", etcd, tmp_path_factory.mktemp("webhook"))
    yield proc
    stop_service(proc)


@dataclass
class CtlResult:
    code: int
    out: str
    err: str


@pytest.fixture
def ctl(etcd: EmbeddedEtcd) -> Callable[..., CtlResult]:
    """Run flotillactl in-process against the session etcd (for sync tests)."""

    def run(*args: str, stdin: str | None = None) -> CtlResult:
        return CtlResult(*flotillactl("--etcd-endpoints", etcd.endpoint, *args, stdin=stdin))

    return run


@pytest.fixture
def clean_etcd(etcd: EmbeddedEtcd) -> EmbeddedEtcd:
    """For sync tests: no objects left from earlier tests."""

    async def wipe() -> None:
        s = await Store.connect(etcd.endpoint)
        try:
            await wipe_objects(s)
        finally:
            await s.close()

    asyncio.run(wipe())
    return etcd
