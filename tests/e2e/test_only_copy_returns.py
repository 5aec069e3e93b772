"""The only copy comes home (issue 32, part 1): a workload placed on one cluster alone, evicted
from it when nothing else can take it, keeps running there under its graceful eviction task; once
that cluster can take the workload again — recovered, its NoExecute taint removed by hand, or the
application healthy again — the scheduler places the binding back on it, the task is dropped as
re-selected, and the member's copy is kept as it is (same uid, never fewer ready replicas).

`flotilla up --sim-clusters 2 --profile demo`, flotillactl and `flotilla sim fault` as processes;
each scenario its own workload.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flotilla.api import registry
from flotilla.api.conditions import is_true
from flotilla.api.v1 import work_pb2
from tests.e2e.failover_support import History, Plane, Sampler, history, placed, started_plane, tasks
from tests.e2e.planes import BIN

pytestmark = pytest.mark.e2e

MEMBERS = ["member1", "member2"]


def workload(name: str, failover: str = "") -> str:
    """A 2-replica Deployment whose policy names member1 alone."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: app, image: nginx}}]}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: default}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]
  placement:
    clusterAffinity: {{clusterNames: [member1]}}
{failover}"""


APPLICATION_FAILOVER = """\
  propagateDeps: true
  failover:
    application:
      decisionConditions: {tolerationSeconds: 2}
      purgeMode: Gracefully
      gracePeriodSeconds: 600
"""


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, len(MEMBERS)) as started:
        yield started


def blocked(binding: work_pb2.ResourceBinding | None) -> bool:
    """Evicted from member1 with nowhere else to go: the task stays, the binding says so."""
    return (binding is not None and not placed(binding) and tasks(binding) == ["member1"]
            and is_true(binding.status.conditions, "EvictionBlocked"))


def home(binding: work_pb2.ResourceBinding | None) -> bool:
    return placed(binding) == [("member1", 2)] and not tasks(binding)


async def app_fault(plane: Plane, what: str, name: str) -> None:
    result = await asyncio.to_thread(plane.run, str(BIN / "flotilla"), "sim", "fault", "member1", what,
                                     "--namespace", "default", "--name", name, "--data-dir", str(plane.data_dir),
                                     "--etcd-endpoints", plane.endpoint)
    assert result.returncode == 0, result.stderr


async def apply(plane: Plane, tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    await plane.ok("apply", "-f", str(path))


@dataclass
class OnlyCopy:
    """One workload running on member1 alone: its bindings' history, a sampler of member1's ready
    replicas, and the uid of the member Deployment."""

    plane: Plane
    name: str
    rbs: History[work_pb2.ResourceBinding]
    sampler: Sampler
    uid: str = ""

    @property
    def key(self) -> str:
        return f"default/{self.name}-deployment"

    async def evicted(self, what: str) -> None:
        await self.rbs.until(lambda: blocked(self.rbs.get(self.key)), 90, f"{self.name} evicted ({what}), blocked")

    async def came_home(self, since: float, what: str, ready_throughout: bool = True) -> float:
        """The binding back on member1 with no task, within the demo profile's deadlines, the task
        dropped as re-selected and the copy never re-created (nor, where it stayed ready while
        evicted, short of ready replicas). Returns the seconds it took."""
        await self.rbs.until(lambda: home(self.rbs.get(self.key)), 90,
                             f"{self.name} back on member1:2 with no task after {what}")
        took = time.monotonic() - since
        # Dropped as re-selected, not aged out: the scheduler placed it back while the task still
        # held member1's copy, and the task went after that.
        versions = [(placed(v.obj), tasks(v.obj)) for v in self.rbs.of(self.key) if v.at >= since]
        dropped = next(i for i, (_, open_tasks) in enumerate(versions) if not open_tasks)
        assert dropped > 0 and versions[dropped - 1] == ([("member1", 2)], ["member1"]), versions
        deployment = (await self.plane.member_deployments("member1"))[("member1", self.name)]
        assert deployment["metadata"]["uid"] == self.uid, "the member's copy was re-created"
        if ready_throughout:
            answered = [s for s in self.sampler.samples if s.at >= since and s.ready.get("member1") is not None]
            assert answered and all(s.ready["member1"] == 2 for s in answered), \
                f"member1's copy was short of ready replicas after {what}: {[s.ready for s in answered]}"
        return took


@contextlib.asynccontextmanager
async def only_copy(plane: Plane, tmp_path: Path, name: str, failover: str = "") -> AsyncIterator[OnlyCopy]:
    """`name` applied with a policy naming member1 alone, once it runs there with both replicas ready."""
    async with history(plane, registry.RESOURCE_BINDING) as rbs:
        sampler = Sampler(plane, ["member1"], name)
        async with sampler.running():
            await apply(plane, tmp_path, name, workload(name, failover))
            copy = OnlyCopy(plane, name, rbs, sampler)
            await rbs.until(lambda: placed(rbs.get(copy.key)) == [("member1", 2)], 90, f"{name} placed on member1")
            await sampler.until(lambda s: s.ready.get("member1") == 2, 90)
            copy.uid = str((await plane.member_deployments("member1"))[("member1", name)]["metadata"]["uid"])
            yield copy


@pytest.mark.timeout(300)
async def test_the_only_copy_comes_home_when_its_cluster_recovers(plane: Plane, tmp_path: Path) -> None:
    async with only_copy(plane, tmp_path, "solo") as solo:
        await plane.fault("member1", "down")
        await solo.evicted("member1 down")

        recovered = time.monotonic()
        await plane.fault("member1", "recover")
        took = await solo.came_home(recovered, "member1 recovered")
        print(f"\nsolo back on member1 {took:.1f}s after member1 recovered")

        # The template reaches the member again, where the copy runs.
        await apply(plane, tmp_path, "solo", workload("solo").replace("replicas: 2", "replicas: 3"))
        await solo.rbs.until(lambda: placed(solo.rbs.get(solo.key)) == [("member1", 3)], 60, "solo scaled to 3")


@pytest.mark.timeout(300)
async def test_the_only_copy_comes_home_when_a_manual_taint_is_removed(plane: Plane, tmp_path: Path) -> None:
    async with only_copy(plane, tmp_path, "pinned") as pinned:
        await plane.ok("taint", "clusters", "member1", "maintenance=now:NoExecute")
        await pinned.evicted("member1 tainted by hand")
        # Still tainted: the task keeps member1 out, the copy keeps running.
        await pinned.rbs.hold(lambda: blocked(pinned.rbs.get(pinned.key)), 4, "pinned stays out while tainted")

        untainted = time.monotonic()
        await plane.ok("taint", "clusters", "member1", "maintenance:NoExecute-")
        await pinned.came_home(untainted, "the taint was removed")


@pytest.mark.timeout(300)
async def test_an_application_failover_copy_comes_home_when_healthy_again(plane: Plane, tmp_path: Path) -> None:
    async with only_copy(plane, tmp_path, "lonely", APPLICATION_FAILOVER) as lonely:
        await app_fault(plane, "app-unhealthy", "lonely")
        await lonely.evicted("its application Unhealthy on member1")
        await lonely.rbs.hold(lambda: blocked(lonely.rbs.get(lonely.key)), 4, "lonely stays out while Unhealthy")

        healthy = time.monotonic()
        await app_fault(plane, "app-recover", "lonely")
        # Its replicas were not ready while Unhealthy: only the uid and the way home are checked.
        await lonely.came_home(healthy, "its application recovered", ready_throughout=False)
