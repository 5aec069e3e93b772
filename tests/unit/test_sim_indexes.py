"""The simulator's shortcuts (a workload's pods by controller uid, list items encoded once per
resourceVersion) answer exactly what a full scan and a fresh encoding would."""

from __future__ import annotations

import json
from typing import Any

from flotilla.aio.clock import FakeClock
from sim.catalog import POD, builtin
from sim.cluster import DEFAULT_VERSION
from sim.state import MERGE_PATCHES, ClusterState
from sim.timers import Timers

DEPLOYMENT = builtin("Deployment")


def cluster() -> ClusterState:
    clock = FakeClock()
    return ClusterState("c1", clock, Timers(clock), 1.0, nodes=1, node_cpu="8", node_memory="32Gi", node_pods=110,
                        git_version=DEFAULT_VERSION)


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def test_an_encoded_list_shows_every_write_since_the_last_list() -> None:
    state = cluster()
    state.create(DEPLOYMENT, "default", deployment("web", 2))
    assert json.loads(state.list_encoded(POD, None)) == state.list(POD, None)
    name = state.list(POD, "default")["items"][0]["metadata"]["name"]
    state.patch(POD, "default", name, {"metadata": {"labels": {"seen": "yes"}}}, MERGE_PATCHES[0], None)
    listed = json.loads(state.list_encoded(POD, "default", "seen=yes"))
    assert listed == state.list(POD, "default", "seen=yes") and len(listed["items"]) == 1
    assert "apiVersion" not in listed["items"][0]
    state.delete(DEPLOYMENT, "default", "web")
    assert json.loads(state.list_encoded(POD, None))["items"] == []


def test_a_workload_finds_exactly_the_pods_it_controls() -> None:
    state = cluster()
    web = state.create(DEPLOYMENT, "default", deployment("web", 3))
    state.create(DEPLOYMENT, "default", deployment("api", 1))
    mine = state.pods_of(web)
    assert [p["metadata"]["name"] for p in mine] == sorted(
        p["metadata"]["name"] for p in state.list(POD, "default")["items"]
        if p["metadata"]["ownerReferences"][0]["uid"] == web["metadata"]["uid"])
    assert len(mine) == 3
    orphan = mine[0]["metadata"]["name"]
    state.patch(POD, "default", orphan, {"metadata": {"ownerReferences": None}}, MERGE_PATCHES[0], None)
    assert orphan not in [p["metadata"]["name"] for p in state.pods_of(web)]
