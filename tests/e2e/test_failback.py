"""Opt-in failback end to end, as a user sees it through flotillactl: member1 fails, the shop
Deployment's replica moves to member2; member1 recovers, and once it has been Ready for the
policy's stabilization window the replica returns home. The failover history records both."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.e2e.planes import flotilla_up
from tests.e2e.test_propagation import BIN, ctl, eventually
from tests.factories import EXAMPLE_FILES

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with flotilla_up(tmp_path_factory, 2) as (data_dir, endpoints):
        yield {"FLOTILLA_ETCD_ENDPOINTS": endpoints, "data_dir": str(data_dir)}


def fault(plane: dict[str, str], cluster: str, kind: str) -> None:
    done = subprocess.run([str(BIN / "flotilla"), "sim", "fault", cluster, kind, "--data-dir", plane["data_dir"]],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def binding(plane: dict[str, str]) -> dict[str, Any]:
    result = ctl(plane, "get", "rb", "shop-deployment", "-n", "default", "-o", "json")
    return json.loads(result.stdout) if result.returncode == 0 else {}


def placed(plane: dict[str, str]) -> list[tuple[str, int]]:
    return [(c["name"], c["replicas"]) for c in binding(plane).get("spec", {}).get("clusters", [])]


def tasks(plane: dict[str, str]) -> list[str]:
    return [t["fromCluster"] for t in binding(plane).get("spec", {}).get("gracefulEvictionTasks", [])]


def test_the_workload_returns_home_after_the_window(plane: dict[str, str]) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "nginx-failback.yaml")
    applied = ctl(plane, "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    eventually(lambda: placed(plane) == [("member1", 1), ("member2", 2)], what="the 1:2 split")

    fault(plane, "member1", "down")
    eventually(lambda: placed(plane) == [("member2", 3)], timeout=90, what="failover to member2")
    eventually(lambda: tasks(plane) == [], timeout=90, what="the eviction task dropped")
    history = binding(plane)["status"]["failoverHistory"]
    assert [(h["fromCluster"], h["reason"]) for h in history] == [("member1", "TaintUntolerated")]

    fault(plane, "member1", "recover")
    eventually(lambda: placed(plane) == [("member1", 1), ("member2", 2)], timeout=120, what="failback home")
    eventually(lambda: binding(plane)["status"]["failoverHistory"][0].get("failedBackTime"), timeout=60,
               what="the failback recorded")
    described = ctl(plane, "describe", "rb", "shop-deployment", "-n", "default")
    assert described.returncode == 0, described.stderr
    assert "Failover history:" in described.stdout and "member1" in described.stdout
