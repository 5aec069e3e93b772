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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flotilla.api import registry
from flotilla.api.conditions import is_true
from flotilla.api.v1 import work_pb2
from tests.e2e.failover_support import History, Plane, Sampler, history, placed, started_plane
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


def tasks(binding: work_pb2.ResourceBinding | None) -> list[str]:
    return [t.from_cluster for t in binding.spec.graceful_eviction_tasks] if binding is not None else []


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


async def running_on_member1(plane: Plane, rbs: History[work_pb2.ResourceBinding], name: str,
                             sampler: Sampler) -> str:
    """Placed on member1 with both replicas ready; the member Deployment's uid."""
    await rbs.until(lambda: placed(rbs.get(f"default/{name}-deployment")) == [("member1", 2)], 90,
                    f"{name} placed on member1")
    await sampler.until(lambda s: s.ready.get("member1") == 2, 90)
    deployment = (await plane.member_deployments("member1"))[("member1", name)]
    return str(deployment["metadata"]["uid"])


async def assert_came_home(plane: Plane, rbs: History[work_pb2.ResourceBinding], name: str, sampler: Sampler,
                           uid: str, since: float, what: str) -> float:
    """The binding back on member1 with no task, within the demo profile's deadlines; the copy
    never re-created and never short of ready replicas. Returns the seconds it took."""
    key = f"default/{name}-deployment"
    await rbs.until(lambda: home(rbs.get(key)), 90, f"{name} back on member1:2 with no task after {what}")
    took = time.monotonic() - since
    # Dropped as re-selected, not aged out: the scheduler placed it back while the task still held
    # member1's copy, and the task went after that.
    versions = [(placed(v.obj), tasks(v.obj)) for v in rbs.of(key) if v.at >= since]
    dropped = next(i for i, (_, open_tasks) in enumerate(versions) if not open_tasks)
    assert dropped > 0 and versions[dropped - 1] == ([("member1", 2)], ["member1"]), versions
    deployment = (await plane.member_deployments("member1"))[("member1", name)]
    assert deployment["metadata"]["uid"] == uid, "the member's copy was re-created"
    answered = [s for s in sampler.samples if s.at >= since and s.ready.get("member1") is not None]
    assert answered and all(s.ready["member1"] == 2 for s in answered), \
        f"member1's copy was short of ready replicas after {what}: {[s.ready for s in answered]}"
    return took


@pytest.mark.timeout(300)
async def test_the_only_copy_comes_home_when_its_cluster_recovers(plane: Plane, tmp_path: Path) -> None:
    name, key = "solo", "default/solo-deployment"
    async with history(plane, registry.RESOURCE_BINDING) as rbs:
        sampler = Sampler(plane, ["member1"], name)
        async with sampler.running():
            await apply(plane, tmp_path, name, workload(name))
            uid = await running_on_member1(plane, rbs, name, sampler)

            await plane.fault("member1", "down")
            await rbs.until(lambda: blocked(rbs.get(key)), 90, "solo evicted from member1, its task blocked")

            recovered = time.monotonic()
            await plane.fault("member1", "recover")
            took = await assert_came_home(plane, rbs, name, sampler, uid, recovered, "member1 recovered")
            print(f"\nsolo back on member1 {took:.1f}s after member1 recovered")

        # The template reaches the member again, where the copy runs.
        await apply(plane, tmp_path, name, workload(name).replace("replicas: 2", "replicas: 3"))
        await rbs.until(lambda: placed(rbs.get(key)) == [("member1", 3)], 60, "solo scaled to member1:3")


@pytest.mark.timeout(300)
async def test_the_only_copy_comes_home_when_a_manual_taint_is_removed(plane: Plane, tmp_path: Path) -> None:
    name, key = "pinned", "default/pinned-deployment"
    async with history(plane, registry.RESOURCE_BINDING) as rbs:
        sampler = Sampler(plane, ["member1"], name)
        async with sampler.running():
            await apply(plane, tmp_path, name, workload(name))
            uid = await running_on_member1(plane, rbs, name, sampler)

            await plane.ok("taint", "clusters", "member1", "maintenance=now:NoExecute")
            await rbs.until(lambda: blocked(rbs.get(key)), 90, "pinned evicted from member1, its task blocked")
            # Still tainted: the task keeps member1 out, the copy keeps running.
            await rbs.hold(lambda: blocked(rbs.get(key)), 4, "pinned stays evicted while member1 is tainted")

            untainted = time.monotonic()
            await plane.ok("taint", "clusters", "member1", "maintenance:NoExecute-")
            await assert_came_home(plane, rbs, name, sampler, uid, untainted, "the taint was removed")


@pytest.mark.timeout(300)
async def test_an_application_failover_copy_comes_home_when_healthy_again(plane: Plane, tmp_path: Path) -> None:
    name, key = "lonely", "default/lonely-deployment"
    async with history(plane, registry.RESOURCE_BINDING) as rbs:
        sampler = Sampler(plane, ["member1"], name)
        async with sampler.running():
            await apply(plane, tmp_path, name, workload(name, APPLICATION_FAILOVER))
            uid = await running_on_member1(plane, rbs, name, sampler)

            await app_fault(plane, "app-unhealthy", name)
            await rbs.until(lambda: blocked(rbs.get(key)), 90, "lonely failed over from member1, its task blocked")
            await rbs.hold(lambda: blocked(rbs.get(key)), 4, "lonely stays evicted while Unhealthy on member1")

            healthy = time.monotonic()
            await app_fault(plane, "app-recover", name)
            await rbs.until(lambda: home(rbs.get(key)), 90, "lonely back on member1:2 with no task")
            deployment = (await plane.member_deployments("member1"))[("member1", name)]
            assert deployment["metadata"]["uid"] == uid, "the member's copy was re-created"
            assert time.monotonic() - healthy < 90
