"""A single service SIGKILLed at a random moment during a failover, with no standby to take over
(`flotilla up` with one replica of each), then started again as `flotilla up` started it: every
binding placed once, every member object present exactly once, no eviction task left — the end
state of a clean failover.

Long (`make chaos`): each service in turn, 200 bindings each, and all at once. `make test` runs
the short version: every service killed at once (a machine's crash) during a failover of 10
bindings; tests/chaos/test_faults.py also kills each leader of a two-replica plane.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flotilla.api import registry
from flotilla.plane.local_plane import SERVICES
from tests.chaos.support import (
    ChaosPlane,
    applied,
    assert_failed_over_once,
    seeded,
)
from tests.chaos.workload import Workload
from tests.e2e.failover_support import history as watch_history

pytestmark = pytest.mark.e2e

COUNT = 200
# A failover of this many bindings in the demo profile: detection, tolerations, eviction,
# rescheduling and the graceful eviction tasks' end all fall within ~25 s of the fault.
FAILOVER_SPAN = 25.0


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("service", "count"), [
    *(pytest.param(s, COUNT, marks=pytest.mark.long, id=s) for s in [*SERVICES, "all"]),
    pytest.param("all", 10, id="all-short"),
])
async def test_a_service_killed_at_a_random_moment_of_a_failover_loses_nothing(
        chaos: ChaosPlane, tmp_path: Path, service: str, count: int, request: pytest.FixtureRequest) -> None:
    """`all`: every service at the same moment, as a machine's crash would."""
    rng = seeded(request.node.name)
    moment, downtime = round(rng.uniform(0, FAILOVER_SPAN), 2), round(rng.uniform(0, 3), 2)
    workload = Workload(f"kill-{service.replace('_', '-')}-{count}", count)
    async with (watch_history(chaos.plane, registry.RESOURCE_BINDING) as rbs,
                watch_history(chaos.plane, registry.CLUSTER) as clusters,
                applied(chaos, workload, tmp_path, rbs) as before):
        failed = max(before, key=lambda c: len(before[c]))
        survivor = "member2" if failed == "member1" else "member1"
        print(f"{failed} down; {service} killed {moment}s later, started again after {downtime}s")
        await chaos.fault(failed, "down")
        await asyncio.sleep(moment)
        pids = [chaos.state().services[s] for s in (SERVICES if service == "all" else [service])]
        launches = await asyncio.gather(*(chaos.kill(pid) for pid in pids))
        await asyncio.sleep(downtime)
        for pid, launch in zip(pids, launches, strict=True):
            chaos.restart(pid, launch)
        await assert_failed_over_once(chaos, rbs, clusters, workload, before, failed, survivor)
