"""Recovery after every member was lost (issue 17, part 2), end to end: with every member down
the NoExecute taints go on and evictions are held back; when they all come back, nothing is
evicted — no binding changes placement, no eviction task appears, no member workload is touched.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2, work_pb2
from tests.e2e.failover_support import History, Plane, history, placed, settled, started_plane
from tests.factories import EXAMPLES_DIR

pytestmark = pytest.mark.e2e

MEMBERS = ["member1", "member2", "member3"]
KEY = "default/nginx-deployment"
# How long after recovery nothing may move: the 30 s, six times the demo profile's
# recovery grace (--failover-eviction-timeout, 5 s), the window in which a replayed eviction
# would fire.
HOLD = 30.0


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, len(MEMBERS)) as started:
        yield started


def no_execute(cluster: cluster_pb2.Cluster | None) -> bool:
    return cluster is not None and any(t.effect == "NoExecute" for t in cluster.spec.taints)


def unchanged(rbs: History[work_pb2.ResourceBinding], before: dict[str, list[tuple[str, int]]]) -> bool:
    return all(placed(rbs.get(k)) == p and not rbs.get(k).spec.graceful_eviction_tasks  # type: ignore[union-attr]
               for k, p in before.items())


def workloads(deployments: dict[tuple[str, str], dict[str, Any]]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """What an eviction would change in a member's Deployment: its existence, uid and replicas."""
    return {k: (d["metadata"].get("uid"), d["spec"].get("replicas")) for k, d in deployments.items()}


@pytest.mark.timeout(240)
async def test_recovery_from_a_total_outage_evicts_nothing(plane: Plane) -> None:
    await plane.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-divided.yaml"))
    async with (history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.CLUSTER) as clusters):
        await rbs.until(lambda: placed(rbs.get(KEY)) == [("member1", 1), ("member2", 2)], 90, "nginx placed")
        before = {k: placed(rbs.get(k)) for k in rbs.informer.keys()}
        members_before = workloads(await plane.member_deployments(",".join(MEMBERS)))
        assert members_before, "no workload in the members"

        # At once: one member down well before the others is an ordinary failover, rightly evicted.
        await plane.fault_all(MEMBERS, "down")
        await clusters.until(lambda: all(no_execute(clusters.get(m)) for m in MEMBERS), 90,
                             "every member NoExecute-tainted")
        # Mass-failure protection holds every eviction back while they are all down.
        assert unchanged(rbs, before), {k: placed(rbs.get(k)) for k in before}

        await plane.fault_all(MEMBERS, "recover")
        recovered = time.monotonic()
        await clusters.until(lambda: all(settled(clusters.get(m)) for m in MEMBERS), 90,
                             "every member Ready and untainted")
        # From the first recovery on, nothing is evicted and nothing moves.
        assert all(unchanged_version for unchanged_version in (
            placed(v.obj) == before.get(k) and not v.obj.spec.graceful_eviction_tasks
            for k in before for v in rbs.of(k) if v.at >= recovered)), "a binding changed during recovery"
        await rbs.hold(lambda: unchanged(rbs, before), HOLD, "placements as before the outage, no eviction task")
        assert workloads(await plane.member_deployments(",".join(MEMBERS))) == members_before
