"""Failovers that finish, end to end (issue 11, scenarios 1, 2 and 5): `flotilla up --sim-clusters 5
--profile demo`, the examples applied with flotillactl, clusters failed with `flotilla sim fault`,
the outcome read with flotillactl. One plane for the module: each scenario uses its own workload
and recovers the cluster it failed.

Throughout each failover the workload's ready replicas are read straight from the members every
0.5 s: with a healthy alternative, their sum never reaches zero.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from flotilla.api import keys, registry
from flotilla.api.conditions import get_condition
from flotilla.api.v1 import work_pb2
from flotilla.plane.profiles import PROFILES
from flotilla.runtime.flags import duration
from tests.e2e.failover_support import Plane, Sampler, eventually, history, placed, started_plane, tasks
from tests.factories import EXAMPLES_DIR

pytestmark = pytest.mark.e2e

MEMBERS = ["member1", "member2", "member3", "member4", "member5"]
GRACEFUL_EVICTION_TIMEOUT = duration(PROFILES["demo"]["FLOTILLA_GRACEFUL_EVICTION_TIMEOUT"])


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, len(MEMBERS)) as started:
        yield started


def health(binding: work_pb2.ResourceBinding | None) -> dict[str, str]:
    return {i.cluster_name: i.health for i in binding.status.aggregated_status} if binding is not None else {}


def ready_in_status(binding: work_pb2.ResourceBinding, cluster: str) -> int:
    for item in binding.status.aggregated_status:
        if item.cluster_name == cluster and item.status:
            return int(json.loads(item.status).get("readyReplicas") or 0)
    return 0


def all_healthy(binding: work_pb2.ResourceBinding | None) -> bool:
    clusters = [name for name, _ in placed(binding)]
    return bool(clusters) and all(health(binding).get(c) == "Healthy" for c in clusters)


def work_key(cluster: str, name: str) -> str:
    return f"{keys.execution_namespace(cluster)}/{keys.work_name('default', name, 'Deployment')}"


async def cluster_settled(plane: Plane, name: str) -> bool:
    """Ready and free of taints, as `flotillactl get clusters -o json` shows it."""
    cluster = json.loads(await plane.ok("get", "clusters", name, "-o", "json"))
    ready = [c for c in cluster.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    return bool(ready) and ready[0]["status"] == "True" and not cluster.get("spec", {}).get("taints")


async def template_ready(plane: Plane, name: str) -> str:
    out = await plane.ok("get", "deployments", name, "-n", "default", "--no-headers")
    return out.split()[1] if out.strip() else ""


async def template_reads(plane: Plane, name: str, ready: str) -> bool:
    return await template_ready(plane, name) == ready


async def recover(plane: Plane, cluster: str) -> None:
    await plane.fault(cluster, "recover")
    await eventually(lambda: cluster_settled(plane, cluster), 90, f"{cluster} Ready and untainted")


@pytest.mark.timeout(360)
async def test_seed_walkthrough_completes_and_nothing_moves_back(plane: Plane) -> None:
    key = "default/nginx-deployment"
    async with (history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works):
        await plane.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-divided.yaml"))
        await rbs.until(lambda: placed(rbs.get(key)) == [("member1", 1), ("member2", 2)] and all_healthy(rbs.get(key)),
                        90, "nginx placed member1:1, member2:2 and Healthy")
        sampler = Sampler(plane, MEMBERS, "nginx")
        async with sampler.running():
            await sampler.until(lambda s: s.ready.get("member1") == 1 and s.ready.get("member2") == 2, 60)
            faulted = time.monotonic()
            await plane.fault("member1", "down")

            await rbs.until(lambda: placed(rbs.get(key)) == [("member2", 3)], 120, "nginx rescheduled to member2:3")
            evicted = next(v for v in rbs.of(key) if v.at >= faulted and tasks(v.obj) == ["member1"])
            assert evicted.obj.spec.graceful_eviction_tasks[0].purge_mode == "Gracefully"
            # The eviction service drops the task once member2's 3 replicas are ready, not before.
            await rbs.until(lambda: placed(rbs.get(key)) == [("member2", 3)] and not tasks(rbs.get(key)), 120,
                            "the graceful eviction task dropped")
            dropped = next(v for v in rbs.of(key) if v.at >= evicted.at and not tasks(v.obj))
            assert health(dropped.obj).get("member2") == "Healthy", health(dropped.obj)
            # Healthy for the generation member2 was given (3 replicas), not the one before it.
            assert ready_in_status(dropped.obj, "member2") == 3, [
                json.loads(i.status or b"{}") for i in dropped.obj.status.aggregated_status]
            await sampler.until(lambda s: s.ready.get("member2") == 3, 30)

            await eventually(lambda: template_reads(plane, "nginx", "3/3"), 60, "the template reading 3/3")
            # Dropping the task lets the executor delete member1's Work; member1 is down, so it waits.
            await works.until(lambda: (w := works.get(work_key("member1", "nginx"))) is not None
                              and w.metadata.HasField("deletion_timestamp"), 60, "member1's Work terminating")
        sampler.assert_never_zero(since=faulted)

        described = await plane.ok("describe", "rb", "nginx-deployment", "-n", "default")
        assert "EvictWorkloadFromClusterSucceed" in described

        # member1 recovers: its leftover copy and its Work go, and nothing moves back.
        await plane.fault("member1", "recover")
        await works.until(lambda: works.get(work_key("member1", "nginx")) is None, 120, "member1's Work gone")
        left = await plane.member_deployments("member1")
        assert ("member1", "nginx") not in left, left
        await eventually(lambda: cluster_settled(plane, "member1"), 90, "member1 Ready and untainted")
        await rbs.hold(lambda: placed(rbs.get(key)) == [("member2", 3)] and not tasks(rbs.get(key)), 6,
                       "nginx stays on member2 after member1 recovered")
        after = [v for v in rbs.of(key) if v.at >= evicted.at]
        assert all("member1" not in dict(placed(v.obj)) for v in after), "nginx was placed back on member1"
        assert await template_ready(plane, "nginx") == "3/3"
        assert (await plane.member_deployments("member2"))[("member2", "nginx")]["status"]["readyReplicas"] == 3


@pytest.mark.timeout(360)
async def test_duplicated_spread_loses_a_cluster_and_ends_on_two_healthy(plane: Plane) -> None:
    key = "default/web-deployment"
    path = str(EXAMPLES_DIR / "nginx-duplicated-spread.yaml")
    async with history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works:
        await plane.ok("apply", "-f", path)
        await rbs.until(lambda: len(placed(rbs.get(key))) == 2 and all_healthy(rbs.get(key)), 90,
                        "web on two Healthy clusters")
        before = [name for name, _ in placed(rbs.get(key))]
        # Fail a Push member (member5 runs in Pull mode beside its agent).
        failed = next(c for c in before if c != "member5")
        sampler = Sampler(plane, MEMBERS, "web")
        try:
            async with sampler.running():
                await sampler.until(lambda s: all(s.ready.get(c) == 2 for c in before), 60)
                faulted = time.monotonic()
                await plane.fault(failed, "down")

                def done() -> bool:
                    binding = rbs.get(key)
                    clusters = [name for name, _ in placed(binding)]
                    return (len(clusters) == 2 and failed not in clusters and not tasks(binding)
                            and all_healthy(binding))

                await rbs.until(done, 150, f"web on two healthy clusters other than {failed}, no task left")
                after = [name for name, _ in placed(rbs.get(key))]
                assert any(tasks(v.obj) == [failed] for v in rbs.of(key) if v.at >= faulted), \
                    "the failed cluster never went through a graceful eviction task"
                await sampler.until(lambda s: all(s.ready.get(c) == 2 for c in after), 60)
            sampler.assert_never_zero(since=faulted)

            shown = await plane.rb("web-deployment")
            assert sorted(c["name"] for c in shown["spec"]["clusters"]) == sorted(after)
            assert not shown["spec"].get("gracefulEvictionTasks")
            assert all(c in after for c in before if c != failed)
            await works.until(lambda: (w := works.get(work_key(failed, "web"))) is None
                              or w.metadata.HasField("deletion_timestamp"), 60, f"{failed}'s Work terminating")
        finally:
            await recover(plane, failed)
        await works.until(lambda: works.get(work_key(failed, "web")) is None, 120, f"{failed}'s Work gone")
        assert ((failed, "web") not in await plane.member_deployments(failed))
        await plane.ok("delete", "-f", path)


@pytest.mark.timeout(360)
async def test_only_cluster_that_fits_fails_and_the_workload_stays_with_a_reason(plane: Plane) -> None:
    key = "default/pinned-deployment"
    path = str(EXAMPLES_DIR / "nginx-pinned.yaml")
    async with history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works:
        await plane.ok("apply", "-f", path)
        await rbs.until(lambda: placed(rbs.get(key)) == [("member4", 2)] and all_healthy(rbs.get(key)), 90,
                        "pinned on member4 and Healthy")
        sampler = Sampler(plane, ["member4"], "pinned")
        try:
            async with sampler.running():
                await sampler.until(lambda s: s.ready.get("member4") == 2, 60)
                faulted = time.monotonic()
                # Its health endpoints fail (so it is NotReady and evicted) but it keeps serving:
                # the copy there is visible, and keeps running.
                await plane.fault("member4", "unhealthy")

                def evicted_nowhere() -> bool:
                    binding = rbs.get(key)
                    scheduled = get_condition(binding.status.conditions, "Scheduled") if binding else None
                    return (tasks(binding) == ["member4"] and not placed(binding) and scheduled is not None
                            and scheduled.status == "False")

                await rbs.until(evicted_nowhere, 120, "the task kept with no placement (Scheduled=False)")
                described = await plane.ok("describe", "rb", "pinned-deployment", "-n", "default")

                def blocked_line(text: str) -> str:
                    return next((ln for ln in text.splitlines() if ln.strip().startswith("EvictionBlocked")), "")

                # The eviction service reports it once it sees the scheduler's verdict (within seconds).
                deadline = time.monotonic() + 60
                while not blocked_line(described) and time.monotonic() < deadline:
                    described = await plane.ok("describe", "rb", "pinned-deployment", "-n", "default")
                line = blocked_line(described)
                assert "NoPlacement" in line and "member4" in line, described

                # Past the graceful eviction timeout the task still stays: its timeout does not
                # delete the only running copy.
                task = rbs.get(key).spec.graceful_eviction_tasks[0]
                created = task.creation_timestamp.ToDatetime(tzinfo=UTC)
                left = (created - datetime.now(UTC)).total_seconds() + GRACEFUL_EVICTION_TIMEOUT + 5

                def kept() -> bool:
                    work = works.get(work_key("member4", "pinned"))
                    return (tasks(rbs.get(key)) == ["member4"] and work is not None
                            and not work.metadata.HasField("deletion_timestamp"))

                await rbs.hold(kept, max(left, 1.0), "the task and member4's Work kept past the timeout")
                assert kept(), "member4's Work was deleted"
                running = await plane.member_deployments("member4")
                assert running[("member4", "pinned")]["status"]["readyReplicas"] == 2
            sampler.assert_never_zero(since=faulted)
        finally:
            await recover(plane, "member4")
        await plane.ok("delete", "-f", path)
        await works.until(lambda: works.get(work_key("member4", "pinned")) is None, 120, "member4's Work gone")
