"""Unit tests run without an etcd: here `store` is a MemoryStore, and asking for an etcd fails."""

from __future__ import annotations

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.store import MemoryStore

# Fixtures of tests/conftest.py that start or reach a real etcd.
ETCD_FIXTURES = frozenset({"etcd", "private_etcd", "private_store", "clean_etcd", "webhook", "ctl"})


@pytest.fixture
def store(memory_store: MemoryStore) -> MemoryStore:
    """A reconciler's store in a unit test: in memory, with etcd's semantics
    (tests/integration/test_store_contract.py holds the two to one contract)."""
    return memory_store


@pytest.fixture
def clock() -> FakeClock:
    """A test's clock, unless its module has its own."""
    return FakeClock()


@pytest.fixture
def memory(clock: FakeClock) -> MemoryStore:
    """A MemoryStore on the test's fake clock (its leases expire by it)."""
    return MemoryStore(clock)


@pytest.fixture(autouse=True)
def _no_etcd(request: pytest.FixtureRequest) -> None:
    used = ETCD_FIXTURES.intersection(request.fixturenames)
    if used:
        pytest.fail(f"a unit test runs without etcd; move it to tests/integration or drop {sorted(used)}")
