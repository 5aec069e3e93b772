"""Purge mode Directly end to end (issue 11): on cluster failover the old Work is deleted first
and the new Work is created only once it is gone, so two copies never run at once. While the
dead cluster cannot confirm the deletion, the binding's DirectlyPurgePending condition says so
(`flotillactl describe rb`), and the task is kept past its timeout; `flotillactl unjoin` of
that cluster releases the old Work and the new one is created.

A plane of its own: the test unjoins a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from flotilla.api import registry
from flotilla.api.conditions import get_condition
from flotilla.api.v1 import work_pb2
from flotilla.plane.profiles import PROFILES
from tests.e2e.failover_support import Plane, history, started_plane, tasks
from tests.e2e.test_failover import placed, work_key
from tests.factories import EXAMPLES_DIR

pytestmark = pytest.mark.e2e

DEMO_GRACEFUL_TIMEOUT = float(PROFILES["demo"]["FLOTILLA_GRACEFUL_EVICTION_TIMEOUT"].removesuffix("s"))


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, 3) as started:
        yield started


def pending(binding: work_pb2.ResourceBinding | None) -> tuple[str, str] | None:
    condition = get_condition(binding.status.conditions, "DirectlyPurgePending") if binding is not None else None
    return (condition.reason, condition.message) if condition is not None else None


@pytest.mark.timeout(360)
async def test_directly_deletes_the_old_work_first_and_unjoin_releases_it(plane: Plane) -> None:
    key = "default/singleton-deployment"
    async with history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works:
        await plane.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-purge-directly.yaml"))

        def healthy_on_one() -> bool:
            binding = rbs.get(key)
            clusters = placed(binding)
            return (len(clusters) == 1 and binding is not None
                    and [(i.cluster_name, i.health) for i in binding.status.aggregated_status]
                    == [(clusters[0][0], "Healthy")])

        await rbs.until(healthy_on_one, 90, "singleton Healthy on one cluster")
        ((old, _),) = placed(rbs.get(key))
        new = "member2" if old == "member1" else "member1"
        old_work, new_work = work_key(old, "singleton"), work_key(new, "singleton")

        faulted = time.monotonic()
        await plane.fault(old, "down")
        await rbs.until(lambda: placed(rbs.get(key)) == [(new, 1)] and tasks(rbs.get(key)) == [old], 120,
                        f"singleton evicted from {old} and placed on {new}")
        assert rbs.get(key).spec.graceful_eviction_tasks[0].purge_mode == "Directly"
        # The old Work is deleted first; the dead cluster cannot confirm it, and the binding says so.
        await works.until(lambda: (w := works.get(old_work)) is not None
                          and w.metadata.HasField("deletion_timestamp"), 60, f"{old}'s Work terminating")
        await rbs.until(lambda: (p := pending(rbs.get(key))) is not None and p[0] == "ClusterNotReady", 60,
                        "DirectlyPurgePending/ClusterNotReady on the binding")
        assert old in pending(rbs.get(key))[1]  # type: ignore[index]
        described = await plane.ok("describe", "rb", "singleton-deployment", "-n", "default")
        line = next((ln for ln in described.splitlines() if ln.strip().startswith("DirectlyPurgePending")), "")
        assert "ClusterNotReady" in line and old in line, described

        # The task outlives the demo profile's graceful eviction timeout while the old Work still
        # waits for its cluster (it carries the state the new copy starts with), and the new Work
        # still waits too.
        task = rbs.get(key).spec.graceful_eviction_tasks[0]
        expired = task.creation_timestamp.ToDatetime(tzinfo=UTC) + timedelta(seconds=DEMO_GRACEFUL_TIMEOUT)
        outlive = (expired - datetime.now(UTC)).total_seconds() + 3
        await rbs.hold(lambda: tasks(rbs.get(key)) == [old], max(outlive, 3), "the Directly task kept while it waits")
        assert pending(rbs.get(key)) is not None
        assert not works.of(new_work), f"a Work was created on {new} before {old}'s was gone"

        # Unjoining the dead cluster releases its Work; the new Work follows.
        unjoined = await plane.ok("unjoin", old, timeout=120)
        assert unjoined.strip() == f"cluster({old}) is unjoined successfully", unjoined
        await works.until(lambda: works.get(new_work) is not None, 60, f"the new Work on {new}")
        await rbs.until(lambda: pending(rbs.get(key)) is None, 60, "DirectlyPurgePending cleared")
        gone = next(v.at for v in works.of(old_work) if v.type.value == "DELETED")
        created = works.of(new_work)[0]
        assert created.type.value == "ADDED" and created.at >= gone >= faulted

        async def running_on_new() -> bool:
            found = await plane.member_deployments(new)
            return bool(found.get((new, "singleton"), {}).get("status", {}).get("readyReplicas") == 1)

        deadline = time.monotonic() + 60
        while not await running_on_new():
            assert time.monotonic() < deadline, f"singleton never became ready on {new}"
