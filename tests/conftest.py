"""Shared fixtures: a real etcd on a free port with its own data dir, and stores on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEtcd]:
    """One etcd for the session; `store` wipes Flotilla's keys before each test."""
    server = EmbeddedEtcd(tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_etcd(tmp_path: Path) -> Iterator[EmbeddedEtcd]:
    """An etcd of this test's own, for tests that stop, restart or compact it."""
    server = EmbeddedEtcd(tmp_path / "etcd")
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def store(etcd: EmbeddedEtcd) -> AsyncIterator[Store]:
    s = await Store.connect(etcd.endpoint)
    await s.client.delete_prefix(b"/flotilla/")
    yield s
    await s.close()


@pytest.fixture
async def private_store(private_etcd: EmbeddedEtcd) -> AsyncIterator[Store]:
    s = await Store.connect(private_etcd.endpoint)
    yield s
    await s.close()
