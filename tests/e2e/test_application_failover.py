"""Application failover end to end (issue 11, e2e case 3), as a user runs it: `flotilla up` with
simulated members and the demo profile; the application is made Unhealthy in member1 with
`flotilla sim fault ... app-unhealthy` while member1 stays Ready; it moves to member2, and it is
not placed back on member1 within blockPredecessorSeconds even when a scale-out would."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.e2e.planes import flotilla_up
from tests.e2e.test_propagation import BIN, ctl, eventually

APP = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: appfail
  namespace: default
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: appfail
  template:
    metadata:
      labels:
        app: appfail
    spec:
      containers:
        - name: app
          image: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: appfail
  namespace: default
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: appfail
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster: {{clusterNames: [member1]}}
            weight: 1
          - targetCluster: {{clusterNames: [member2]}}
            weight: 1
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Gracefully
      gracePeriodSeconds: 30
      blockPredecessorSeconds: 600
"""


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with flotilla_up(tmp_path_factory, 2) as (data_dir, endpoints):
        yield {"FLOTILLA_ETCD_ENDPOINTS": endpoints, "data_dir": str(data_dir)}


def apply(plane: dict[str, str], tmp_path: Path, replicas: int) -> None:
    path = tmp_path / f"appfail-{replicas}.yaml"
    path.write_text(APP.format(replicas=replicas))
    applied = ctl(plane, "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr


def binding(plane: dict[str, str]) -> dict[str, Any]:
    result = ctl(plane, "get", "rb", "appfail-deployment", "-n", "default", "-o", "json")
    return json.loads(result.stdout) if result.returncode == 0 else {}


def placed(plane: dict[str, str]) -> list[tuple[str, int]]:
    return [(c["name"], c.get("replicas", 0)) for c in binding(plane).get("spec", {}).get("clusters", [])]


def member1_ready(plane: dict[str, str]) -> bool:
    result = ctl(plane, "get", "clusters", "member1", "-o", "json")
    cluster = json.loads(result.stdout) if result.returncode == 0 else {}
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in cluster.get("status", {}).get("conditions", []))


def test_an_unhealthy_application_moves_while_its_cluster_stays_ready(plane: dict[str, str],
                                                                       tmp_path: Path) -> None:
    apply(plane, tmp_path, replicas=2)
    assert eventually(lambda: placed(plane) == [("member1", 1), ("member2", 1)], what="a 1:1 split")

    def health() -> list[tuple[str, str]]:
        items = binding(plane).get("status", {}).get("aggregatedStatus", [])
        return [(i["clusterName"], i.get("health", "")) for i in items]

    assert eventually(lambda: health() == [("member1", "Healthy"), ("member2", "Healthy")], what="both Healthy")

    fault = subprocess.run([str(BIN / "flotilla"), "sim", "fault", "member1", "app-unhealthy", "--namespace",
                            "default", "--name", "appfail", "--data-dir", plane["data_dir"]],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert fault.returncode == 0, fault.stderr

    def history() -> list[str]:
        return [h["clusterName"] for h in binding(plane).get("spec", {}).get("activeEvictionHistory", [])]

    # The eviction task may come and go between two looks; the history entry stays.
    assert eventually(lambda: history() == ["member1"], what="member1 evicted by application failover")
    assert member1_ready(plane)  # application failover, not cluster failover

    def settled() -> bool:
        spec = binding(plane).get("spec", {})
        return (placed(plane) == [("member2", 2)] and not spec.get("gracefulEvictionTasks")
                and health() == [("member2", "Healthy")])

    try:
        eventually(settled, what="all replicas Healthy on member2, the eviction task dropped")
    except AssertionError:
        rb = binding(plane)
        raise AssertionError(json.dumps({"spec": rb.get("spec"), "status": rb.get("status"),
                                         "gen": rb.get("metadata", {}).get("generation")})) from None

    # A scale-out that a 1:1 split would put half on member1: all of it stays on member2.
    apply(plane, tmp_path, replicas=4)
    assert eventually(lambda: sum(r for _, r in placed(plane)) == 4 and placed(plane),
                      what="the scale-out scheduled") == [("member2", 4)]
    assert member1_ready(plane)
    events = ctl(plane, "get", "events", "-n", "default", "-o", "json")
    assert events.returncode == 0, events.stderr
    assert any(e.get("reason") == "EvictWorkloadFromClusterSucceed" and "member1" in e.get("message", "")
               for e in json.loads(events.stdout).get("items", []))
