"""One simulator process serves a hundred clusters, all probed at once
(flotilla/plane/benchmarks/member_health.py times it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from flotilla.member import Health, MemberClient

if TYPE_CHECKING:
    from tests.sim_fixtures import StartSim

pytestmark = pytest.mark.timeout(120)

CLUSTERS = 100


async def test_a_hundred_clusters_health_checked_concurrently(start_sim: StartSim,
                                                              member_client: Callable[..., MemberClient]) -> None:
    started = time.monotonic()
    server = await start_sim(*(f"member{i}" for i in range(1, CLUSTERS + 1)))
    ready = time.monotonic()
    server.cluster("member7").set_fault("down")
    clients = [member_client(server, f"member{i}", timeout=30) for i in range(1, CLUSTERS + 1)]

    probing = time.monotonic()
    results = await asyncio.gather(*(client.health() for client in clients))
    probed = time.monotonic()
    again = await asyncio.gather(*(client.health() for client in clients))  # on warm connections
    reprobed = time.monotonic()

    print(f"\n{CLUSTERS} clusters: start {ready - started:.3f}s, first health round {probed - probing:.3f}s, "
          f"second round {reprobed - probed:.3f}s")
    expected = [Health(online=(i != 7), healthy=(i != 7)) for i in range(1, CLUSTERS + 1)]
    assert results == expected and again == expected
