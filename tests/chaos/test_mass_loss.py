"""Every member lost at once (a control-plane-side partition), with 200 bindings: nothing is
evicted while they are gone, and when they return nothing has moved. The scenario and its checks
are tests/e2e/test_mass_recovery.py's (which runs in `make test` with one workload); this is its
long version for `make chaos`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flotilla.api import registry
from tests.chaos.support import ChaosPlane, applied, until
from tests.chaos.workload import Workload
from tests.e2e.failover_support import history as watch_history
from tests.e2e.failover_support import placed, settled
from tests.e2e.test_mass_recovery import no_execute, unchanged

pytestmark = [pytest.mark.e2e, pytest.mark.long]

MEMBERS = ["member1", "member2", "member3"]
# Twice the demo profile's tolerations (5 s) plus its eviction timeout (5 s): an eviction held
# back wrongly would have happened by then.
HOLD = 20.0


@pytest.mark.timeout(600)
async def test_losing_every_member_at_once_evicts_and_moves_nothing(chaos: ChaosPlane, tmp_path: Path) -> None:
    workload = Workload("mass", 200)
    async with (watch_history(chaos.plane, registry.RESOURCE_BINDING) as rbs,
                watch_history(chaos.plane, registry.CLUSTER) as clusters,
                applied(chaos, workload, tmp_path, rbs)):
        before = {k: placed(rbs.get(k)) for k in workload.keys}
        expected = {n: [c for c, _ in before[k]] for n, k in zip(workload.names, workload.keys, strict=True)}

        async def applied_to_members() -> bool | dict[str, list[str]]:
            copies = await chaos.member_copies(workload, MEMBERS)
            return True if copies == expected else {n: c for n, c in copies.items() if c != expected[n]}

        await until(applied_to_members, 120, "every Deployment in the member it is placed in")
        await asyncio.gather(*(chaos.fault(m, "down") for m in MEMBERS))
        await clusters.until(lambda: all(no_execute(clusters.get(m)) for m in MEMBERS), 120,
                             "every member NoExecute-tainted")
        await rbs.hold(lambda: unchanged(rbs, before), HOLD, "nothing evicted while every member is gone")
        await asyncio.gather(*(chaos.fault(m, "recover") for m in MEMBERS))
        await clusters.until(lambda: all(settled(clusters.get(m)) for m in MEMBERS), 120,
                             "every member Ready and untainted")
        await rbs.hold(lambda: unchanged(rbs, before), HOLD, "nothing moved once they returned")
        assert await chaos.member_copies(workload, MEMBERS) == expected
