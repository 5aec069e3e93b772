"""A member object Flotilla does not own (issue 32, part 3), end to end: `flotilla up
--sim-clusters 3 --profile demo`, the foreign object made first with the real kubectl and the
simulated member's kubeconfig, templates applied and deleted with flotillactl.

- conflictResolution Abort (the default): the object is left exactly as it was, the Work reads
  Applied=False with Karmada's message, the binding's aggregatedStatus says so, an Event says
  why; deleting the template leaves it in place.
- Overwrite: the object is taken over (the same object, now Flotilla's), and deleted with the
  template.
- A failover onto a cluster holding a same-named foreign object does not overwrite it and says
  so on the binding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from flotilla.api import keys, registry
from flotilla.api.conditions import get_condition
from flotilla.api.v1 import work_pb2
from tests.e2e.failover_support import History, Plane, eventually, history, placed, started_plane
from tests.factories import EXAMPLES_DIR

KUBECTL = shutil.which("kubectl")
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360),
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH (it is in CI)")]

MESSAGE = ("already exists in the cluster {cluster} and the work.karmada.io/conflict-resolution strategy value "
           "is abort, Flotilla will not manage this resource")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, 3) as started:
        yield started


def foreign(name: str) -> str:
    """Another team's Deployment, as they would write it."""
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name, "owner": "other-team"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": name, "image": "other-team/nginx:custom"}]}}},
    })


class Kubectl:
    """The real kubectl against one simulated member, with a HOME and cache of its own."""

    def __init__(self, plane: Plane, cluster: str, home: Path) -> None:
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECACHEDIR": str(home / "cache"),
                    "KUBECONFIG": str(plane.kubeconfig(cluster))}

    async def run(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        assert KUBECTL is not None
        proc = await asyncio.create_subprocess_exec(
            KUBECTL, *args, env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
        return proc.returncode or 0, out.decode(), err.decode()

    async def ok(self, *args: str, stdin: str | None = None) -> str:
        code, out, err = await self.run(*args, stdin=stdin)
        assert code == 0, (args, err)
        return out

    async def deployment(self, name: str) -> dict[str, Any] | None:
        code, out, err = await self.run("get", "deployment", name, "-n", "default", "-o", "json")
        if code != 0:
            assert "NotFound" in err, err
            return None
        found: dict[str, Any] = json.loads(out)
        return found


async def made_foreign(plane: Plane, tmp_path: Path, cluster: str, name: str) -> tuple[Kubectl, dict[str, Any]]:
    """The real kubectl on `cluster`, and another team's Deployment `name` made there with it, as
    it reads back."""
    kubectl = Kubectl(plane, cluster, tmp_path / "home")
    await kubectl.ok("create", "-f", "-", stdin=foreign(name))
    before = await kubectl.deployment(name)
    assert before is not None
    return kubectl, before


class OverForeign(NamedTuple):
    kubectl: Kubectl  # on the member holding the foreign object
    before: dict[str, Any]  # the foreign object as its team made it
    path: str  # the file of the templates applied over it
    rbs: History[work_pb2.ResourceBinding]
    key: str  # the binding of the Deployment


@contextlib.asynccontextmanager
async def applied_over(plane: Plane, tmp_path: Path, cluster: str, name: str,
                       templates: str) -> AsyncIterator[OverForeign]:
    """Another team's Deployment `name` made on `cluster`, then `templates`, which propagate a
    Deployment of that name, applied with flotillactl while the bindings are watched."""
    kubectl, before = await made_foreign(plane, tmp_path, cluster, name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(templates)
    async with history(plane, registry.RESOURCE_BINDING) as rbs:
        await plane.ok("apply", "-f", str(path))
        yield OverForeign(kubectl, before, str(path), rbs, f"default/{name}-deployment")


def image(obj: dict[str, Any]) -> str:
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


def untouched(before: dict[str, Any], now: dict[str, Any] | None) -> None:
    """The foreign object as its team made it: the same object, never written by Flotilla."""
    assert now is not None, "the foreign object was deleted"
    meta = now["metadata"]
    assert meta["uid"] == before["metadata"]["uid"]
    assert meta.get("labels") == before["metadata"].get("labels")
    assert not any(k.startswith(("karmada.io", "resourcebinding.karmada.io", "work.karmada.io"))
                   for k in {**meta.get("labels", {}), **meta.get("annotations", {})}), meta
    assert (now["spec"]["replicas"], image(now)) == (1, "other-team/nginx:custom")
    assert meta["generation"] == before["metadata"]["generation"]  # its spec never written


def work_key(cluster: str, name: str) -> str:
    return f"{keys.execution_namespace(cluster)}/{keys.work_name('default', name, 'Deployment')}"


def item(binding: work_pb2.ResourceBinding | None, cluster: str) -> work_pb2.AggregatedStatusItem | None:
    if binding is None:
        return None
    return next((i for i in binding.status.aggregated_status if i.cluster_name == cluster), None)


def refused_on(binding: work_pb2.ResourceBinding | None, cluster: str) -> bool:
    """The binding's aggregatedStatus reports the conflict on `cluster`."""
    found = item(binding, cluster)
    return found is not None and not found.applied and MESSAGE.format(cluster=cluster) in found.applied_message


def applied(work: work_pb2.Work | None) -> tuple[str, str, str] | None:
    condition = get_condition(work.status.conditions, "Applied") if work is not None else None
    return (condition.status, condition.reason, condition.message) if condition is not None else None


async def test_abort_leaves_another_teams_object_alone_and_deleting_the_template_keeps_it(
    plane: Plane, tmp_path: Path
) -> None:
    kubectl, before = await made_foreign(plane, tmp_path, "member2", "nginx")
    key, path = "default/nginx-deployment", str(EXAMPLES_DIR / "nginx-divided.yaml")
    async with history(plane, registry.RESOURCE_BINDING) as rbs, history(plane, registry.WORK) as works:
        await plane.ok("apply", "-f", path)
        await rbs.until(lambda: refused_on(rbs.get(key), "member2")
                        and (i := item(rbs.get(key), "member1")) is not None and i.applied, 90,
                        "member1 applied and member2's conflict in the aggregated status")
        binding = rbs.get(key)
        assert binding is not None and placed(binding) == [("member1", 1), ("member2", 2)]
        fully = get_condition(binding.status.conditions, "FullyApplied")
        assert fully is not None and fully.status == "False"
        status, reason, message = applied(works.get(work_key("member2", "nginx"))) or ("", "", "")
        assert (status, reason) == ("False", "AppliedFailed")
        assert message == ("Failed to apply all manifests (0/1): resource(kind=Deployment, default/nginx) "
                           + MESSAGE.format(cluster="member2"))

        async def described() -> bool:
            out = await plane.ok("describe", "deployment", "nginx", "-n", "default")
            return "SyncFailed" in out and "already exists in the cluster member2" in out

        await eventually(described, 60, "the template's SyncFailed Event")
        untouched(before, await kubectl.deployment("nginx"))
        # Retried with backoff all along: still the other team's after a few more tries.
        await rbs.hold(lambda: refused_on(rbs.get(key), "member2"), 3, "member2's conflict reported")
        untouched(before, await kubectl.deployment("nginx"))

        await plane.ok("delete", "-f", path)
        await works.until(lambda: works.get(work_key("member1", "nginx")) is None
                          and works.get(work_key("member2", "nginx")) is None, 90, "both Works gone")
        assert ("member1", "nginx") not in await plane.member_deployments("member1")
        untouched(before, await kubectl.deployment("nginx"))
    await kubectl.ok("delete", "deployment", "nginx", "-n", "default")


OVERWRITTEN = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: adopted
  namespace: default
  labels: {app: adopted}
spec:
  replicas: 2
  selector:
    matchLabels: {app: adopted}
  template:
    metadata:
      labels: {app: adopted}
    spec:
      containers:
        - name: adopted
          image: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: adopted-propagation
  namespace: default
spec:
  conflictResolution: Overwrite
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: adopted
  placement:
    clusterAffinity:
      clusterNames: [member2]
    replicaScheduling:
      replicaSchedulingType: Duplicated
"""


async def test_overwrite_takes_the_object_over_and_then_it_is_flotillas(plane: Plane, tmp_path: Path) -> None:
    async with applied_over(plane, tmp_path, "member2", "adopted", OVERWRITTEN) as (kubectl, before, path, rbs, key):
        await rbs.until(lambda: (i := item(rbs.get(key), "member2")) is not None and i.applied
                        and i.health == "Healthy", 90, "adopted applied and Healthy on member2")
        taken = await kubectl.deployment("adopted")
        assert taken is not None
        assert taken["metadata"]["uid"] == before["metadata"]["uid"]  # the same object, taken over
        assert (taken["spec"]["replicas"], image(taken)) == (2, "nginx")
        labels, binding = taken["metadata"]["labels"], rbs.get(key)
        assert labels["karmada.io/managed"] == "true"
        assert binding is not None and labels["resourcebinding.karmada.io/permanent-id"] == \
            binding.metadata.labels["resourcebinding.karmada.io/permanent-id"]

        await plane.ok("delete", "-f", path)

        async def gone() -> bool:
            return await kubectl.deployment("adopted") is None

        await eventually(gone, 90, "the adopted object deleted with its template")


STANDBY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: standby
  namespace: default
  labels: {app: standby}
spec:
  replicas: 2
  selector:
    matchLabels: {app: standby}
  template:
    metadata:
      labels: {app: standby}
    spec:
      containers:
        - name: standby
          image: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: standby-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: standby
  placement:
    clusterAffinities:
      - affinityName: primary
        clusterNames: [member1]
      - affinityName: backup
        clusterNames: [member3]
    replicaScheduling:
      replicaSchedulingType: Duplicated
"""


async def test_a_failover_onto_a_foreign_object_does_not_overwrite_it(plane: Plane, tmp_path: Path) -> None:
    async with applied_over(plane, tmp_path, "member3", "standby", STANDBY) as (kubectl, before, path, rbs, key):
        await rbs.until(lambda: placed(rbs.get(key)) == [("member1", 2)]
                        and (i := item(rbs.get(key), "member1")) is not None and i.health == "Healthy", 90,
                        "standby Healthy on member1")
        try:
            await plane.fault("member1", "down")
            await rbs.until(lambda: placed(rbs.get(key)) == [("member3", 2)] and refused_on(rbs.get(key), "member3"),
                            150, "standby failed over to member3, its conflict in the aggregated status")
            untouched(before, await kubectl.deployment("standby"))
            await rbs.hold(lambda: refused_on(rbs.get(key), "member3"), 3, "member3's conflict reported")
            untouched(before, await kubectl.deployment("standby"))
        finally:
            await plane.fault("member1", "recover")
        await plane.ok("delete", "-f", path)
        await rbs.until(lambda: rbs.get(key) is None, 120, "the binding gone")
    untouched(before, await kubectl.deployment("standby"))
