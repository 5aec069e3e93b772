"""Stateful failover end to end (docs/karmada-rules.md §12.2 and §12.3): `flotilla up --feature-gates
StatefulFailoverInjection=true` with two simulated members, the FlinkDeployment CRD and the
example's FlinkDeployment applied with flotillactl (purgeMode Directly, statePreservation
`{ .jobStatus.jobId }`). The member running it reports a job ID, then goes down: the job
arrives on the other member carrying the job ID as a label, and its old Work is gone before the
new one is created — checked on etcd's own history of the Works, revision by revision."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from flotilla.api import keys, registry
from flotilla.api.v1 import work_pb2
from flotilla.store import Store
from flotilla.store.base import WatchKind
from tests.conftest import ROOT
from tests.e2e.planes import BIN, flotilla_up
from tests.factories import EXAMPLE_FILES

pytestmark = pytest.mark.e2e

JOB_LABEL = "application.karmada.io/cluster-failover-jobid"
JOB_ID = "7f3b0a1c9d2e4f5a8b6c0d1e2f3a4b5c"
FLINK = "/apis/flink.apache.org/v1beta1/namespaces/default/flinkdeployments"
MEMBERS = ("member1", "member2")

# Karmada adds no NoExecute taint by itself (§15): this policy turns a NotReady member into one.
TAINT_POLICY = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: evict-from-unhealthy-members
spec:
  targetClusters:
    clusterNames: [member1, member2]
  addOnConditions:
    - conditionType: Ready
      operator: In
      statusValues: ["False", "Unknown"]
  removeOnConditions:
    - conditionType: Ready
      operator: In
      statusValues: ["True"]
  taints:
    - key: cluster.karmada.io/not-ready
      effect: NoExecute
"""


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with flotilla_up(tmp_path_factory, 2, "--feature-gates", "StatefulFailoverInjection=true") as (data_dir, endpoints):
        yield {"endpoints": endpoints, "data_dir": str(data_dir)}


def ctl(plane: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "flotillactl"), "--etcd-endpoints", plane["endpoints"], *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def fault(plane: dict[str, str], cluster: str, what: str) -> None:
    done = subprocess.run([str(BIN / "flotilla"), "sim", "fault", cluster, what, "--data-dir", plane["data_dir"]],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def eventually(check: Callable[[], Any], timeout: float = 60, what: str = "", every: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}: last saw {last!r}")


class Member:
    """A simulated member's Kubernetes API, with the token of its kubeconfig."""

    def __init__(self, plane: dict[str, str], name: str) -> None:
        config = yaml.safe_load((Path(plane["data_dir"]) / "sim" / "kubeconfigs" / f"{name}.yaml").read_text())
        self.server = config["clusters"][0]["cluster"]["server"]
        self.token = config["users"][0]["user"]["token"]
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
        self.tls = ssl.create_default_context(cadata=ca)

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/merge-patch+json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=5, context=self.tls) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def flink(self) -> dict[str, Any] | None:
        with contextlib.suppress(OSError):
            return self.request("GET", f"{FLINK}/flink-app")  # type: ignore[no-any-return]
        return None


def binding(plane: dict[str, str]) -> dict[str, Any]:
    got = ctl(plane, "get", "rb", "flink-app-flinkdeployment", "-n", "default", "-o", "json")
    return json.loads(got.stdout) if got.returncode == 0 else {}


def serves_flink(plane: dict[str, str], cluster: str) -> bool:
    got = ctl(plane, "get", "cluster", cluster, "-o", "json")
    enablements = json.loads(got.stdout).get("status", {}).get("apiEnablements", []) if got.returncode == 0 else []
    return any(e["groupVersion"] == "flink.apache.org/v1beta1" for e in enablements)


def created_copy(member: Member, since: str) -> dict[str, Any] | None:
    """The FlinkDeployment as the member first created it after resourceVersion `since`, read back
    from the member's own watch history: the job label lives only as long as the eviction task, which
    is dropped as soon as the new copy is healthy, so polling the object could miss it."""
    req = urllib.request.Request(f"{member.server}{FLINK}?watch=1&resourceVersion={since}&timeoutSeconds=2",
                                 headers={"Authorization": f"Bearer {member.token}"})
    with urllib.request.urlopen(req, timeout=30, context=member.tls) as answer:
        for line in answer:
            event = json.loads(line)
            if event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "flink-app":
                return event["object"]  # type: ignore[no-any-return]
    return None


WORK_NAME = keys.work_name("default", "flink-app", "FlinkDeployment")


def work_history(endpoints: str, since: int) -> list[tuple[int, str, str, work_pb2.Work | None]]:
    """Every change to the FlinkDeployment's Works from revision `since` on, in etcd's order:
    (revision, PUT|DELETE, cluster, the Work written)."""

    async def replay() -> list[tuple[int, str, str, work_pb2.Work | None]]:
        store = await Store.connect(endpoints)
        history: list[tuple[int, str, str, work_pb2.Work | None]] = []
        try:
            async with contextlib.aclosing(store.watch(keys.etcd_prefix(registry.WORK.resource), since)) as events:
                while True:
                    try:
                        event = await asyncio.wait_for(anext(events), 2.0)
                    except TimeoutError:
                        return history
                    namespace, name = event.key.split("/")[-2:]
                    if name != WORK_NAME:
                        continue
                    work = (store.decode(registry.WORK, event.value, event.revision, event.key)
                            if event.kind == WatchKind.PUT else None)
                    history.append((event.revision, event.kind.value,
                                    keys.cluster_of_execution_namespace(namespace) or "", work))
        finally:
            await store.close()

    return asyncio.run(replay())


async def _revision(endpoints: str) -> int:
    store = await Store.connect(endpoints)
    try:
        return (await store.list(registry.WORK)).revision
    finally:
        await store.close()


def manifest_labels(work: work_pb2.Work) -> dict[str, str]:
    return dict(json.loads(work.spec.workload.manifests[0])["metadata"].get("labels", {}))


@pytest.mark.timeout(300)
def test_flink_job_fails_over_directly_with_its_job_id(plane: dict[str, str], tmp_path: Path) -> None:
    taints = tmp_path / "taint-policy.yaml"
    taints.write_text(TAINT_POLICY)
    examples = {p.name: p for p in EXAMPLE_FILES}
    for path in (taints, examples["flink-crd.yaml"]):
        applied = ctl(plane, "apply", "-f", str(path))
        assert applied.returncode == 0, f"{path.name}: {applied.stderr}"
    # The CRD reaches the members through its ClusterPropagationPolicy. Only once both clusters
    # report the kind among their API enablements can the scheduler place a FlinkDeployment
    # (a binding no cluster fits waits for a change to a Cluster's spec or labels, not its status).
    eventually(lambda: all(serves_flink(plane, m) for m in MEMBERS), what="the FlinkDeployment API in every member")
    applied = ctl(plane, "apply", "-f", str(examples["flink-state-preservation.yaml"]))
    assert applied.returncode == 0, applied.stderr
    members = {name: Member(plane, name) for name in MEMBERS}

    # One member runs the job (spread over exactly one cluster); it reports a job ID.
    def placed() -> list[str]:
        return [c["name"] for c in binding(plane).get("spec", {}).get("clusters", [])]

    (first,) = eventually(placed, what="scheduling")
    (second,) = [m for m in MEMBERS if m != first]
    eventually(lambda: members[first].flink(), what=f"the FlinkDeployment on {first}")
    reported = members[first].request("PATCH", f"{FLINK}/flink-app/status",
                                      {"status": {"jobStatus": {"jobId": JOB_ID, "state": "RUNNING"}}})
    assert reported["status"]["jobStatus"]["jobId"] == JOB_ID

    def collected() -> bool:
        items = binding(plane).get("status", {}).get("aggregatedStatus", [])
        return any(i["clusterName"] == first and (i.get("status") or {}).get("jobStatus", {}).get("jobId") == JOB_ID
                   for i in items)

    eventually(collected, what="the job ID in the binding's aggregated status")
    assert members[second].flink() is None
    assert JOB_LABEL not in members[first].flink()["metadata"].get("labels", {})  # type: ignore[index]

    since = asyncio.run(_revision(plane["endpoints"])) + 1
    fault(plane, first, "down")

    # Evicted Directly, with the job ID kept on the task.
    def task() -> dict[str, Any] | None:
        tasks = binding(plane).get("spec", {}).get("gracefulEvictionTasks", [])
        return next((t for t in tasks if t["fromCluster"] == first), None)

    evicted = eventually(task, timeout=90, what=f"an eviction task from {first}")
    assert evicted["purgeMode"] == "Directly"
    assert evicted["preservedLabelState"] == {JOB_LABEL: JOB_ID}
    assert evicted.get("clustersBeforeFailover") == [first]
    eventually(lambda: placed() == [second] and placed(), what=f"rescheduling to {second}")
    # Directly: the new copy waits for the old one, which cannot be deleted while its member is down.
    time.sleep(3)
    assert members[second].flink() is None
    before_recovery = members[second].request("GET", FLINK)["metadata"]["resourceVersion"]
    fault(plane, first, "recover")

    arrived = eventually(lambda: members[second].flink(), timeout=90, what=f"the FlinkDeployment on {second}")
    assert members[first].flink() is None, "the old copy is gone before the new one exists"
    created = created_copy(members[second], before_recovery)
    assert created is not None and (created["metadata"].get("labels") or {}).get(JOB_LABEL) == JOB_ID, created
    assert arrived["spec"]["job"]["parallelism"] == 2

    history = work_history(plane["endpoints"], since)
    present = {first}
    deleted_at = created_at = None
    for revision, kind, cluster, work in history:
        if kind == "DELETE":
            present.discard(cluster)
            if cluster == first and deleted_at is None:
                deleted_at = revision
            continue
        if cluster == second and cluster not in present:
            created_at = revision
            assert work is not None and manifest_labels(work).get(JOB_LABEL) == JOB_ID, \
                "the new Work carries the job ID from its creation"
        present.add(cluster)
        assert present != set(MEMBERS), f"both Works exist at revision {revision}"
    assert deleted_at is not None and created_at is not None and deleted_at < created_at, history
