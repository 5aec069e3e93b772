"""The seed case end to end, as a user runs it: `flotilla up` with simulated members, the
nginx Deployment and its PropagationPolicy applied with flotillactl, and the result looked
at with flotillactl — in the control plane and in the members."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.e2e.planes import BIN, flotilla_up
from tests.factories import EXAMPLE_FILES


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with flotilla_up(tmp_path_factory, 3) as (data_dir, endpoints):
        yield {"FLOTILLA_ETCD_ENDPOINTS": endpoints, "data_dir": str(data_dir)}


def ctl(plane: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "flotillactl"), "--etcd-endpoints", plane["FLOTILLA_ETCD_ENDPOINTS"], *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def eventually(check: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    """Poll a CLI-visible condition: the processes under test give no signal to await."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}: last saw {last!r}")


def test_seed_deployment_is_divided_one_to_two_and_ready(plane: dict[str, str]) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "nginx-divided.yaml")
    applied = ctl(plane, "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr

    def binding() -> dict[str, Any] | None:
        result = ctl(plane, "get", "rb", "nginx-deployment", "-n", "default", "-o", "json")
        return json.loads(result.stdout) if result.returncode == 0 else None

    def placed() -> list[tuple[str, int]] | None:
        rb = binding()
        return [(c["name"], c["replicas"]) for c in rb["spec"].get("clusters", [])] if rb else None

    assert eventually(lambda: placed() == [("member1", 1), ("member2", 2)] and placed(), what="scheduling")

    def member_replicas() -> dict[str, int]:
        result = ctl(plane, "member", "get", "deployments", "--clusters", "member1,member2", "-o", "json")
        if result.returncode != 0:
            return {}
        return {i["cluster"]: i.get("status", {}).get("readyReplicas", 0) for i in json.loads(result.stdout)["items"]}

    assert eventually(lambda: member_replicas() == {"member1": 1, "member2": 2}, what="member deployments ready")

    def template_ready() -> str:
        result = ctl(plane, "get", "deployments", "nginx", "--no-headers")
        return result.stdout.split()[1] if result.returncode == 0 and result.stdout.strip() else ""

    assert eventually(lambda: template_ready() == "3/3", what="template 3/3")

    def healthy() -> bool:
        rb = binding()
        items = (rb or {}).get("status", {}).get("aggregatedStatus", [])
        return [(i["clusterName"], i.get("health")) for i in items] == [("member1", "Healthy"),
                                                                          ("member2", "Healthy")]

    assert eventually(healthy, what="aggregatedStatus Healthy on both")


PULL_APP = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pulled
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels:
      app: pulled
  template:
    metadata:
      labels:
        app: pulled
    spec:
      containers:
        - name: app
          image: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: pulled
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: pulled
  placement:
    clusterAffinity:
      clusterNames:
        - member3
"""


def test_pull_cluster_gets_its_work_through_its_agent(plane: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "pulled.yaml"
    path.write_text(PULL_APP)
    applied = ctl(plane, "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr

    def in_member3() -> int:
        result = ctl(plane, "member", "get", "deployments", "--clusters", "member3", "-o", "json")
        items = json.loads(result.stdout)["items"] if result.returncode == 0 else []
        return next((i.get("status", {}).get("readyReplicas", 0) for i in items
                     if i["metadata"]["name"] == "pulled"), 0)

    assert eventually(lambda: in_member3() == 2, what="the Pull cluster's agent applying its Work")
