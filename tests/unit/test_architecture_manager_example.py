"""docs/architecture.md's Manager example ("Controllers and the Manager") is code that runs: its
block is taken from the page as written and wired on a Manager over a MemoryStore, so a name it
uses that stops existing, or a wiring that stops working, fails here."""

from __future__ import annotations

import asyncio
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.manager import Manager
from flotilla.store.memory import MemoryStore

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
SECTION = "## Controllers and the Manager"


def example_block() -> str:
    """The first Python block of the section, as the page shows it."""
    text = ARCHITECTURE.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.find("\n## ", len(SECTION))]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, f"no Python block under {SECTION!r} in {ARCHITECTURE}"
    return found.group(1)


def load_example() -> types.ModuleType:
    module = types.ModuleType("architecture_manager_example")
    exec(compile(example_block(), f"{ARCHITECTURE}:{SECTION}", "exec"), module.__dict__)
    return module


def cluster(name: str, endpoint: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name = name
    c.spec.api_endpoint = endpoint
    return c


async def until(check: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what}") from None


async def test_the_manager_example_runs_against_a_memory_store() -> None:
    example = load_example()
    store = MemoryStore()
    await store.create(cluster("member1", "https://member1:6443"))
    manager = Manager(store, RealClock())
    endpoints: Any = example.wire(manager)
    assert [c.name for c in manager.controllers] == ["cluster-endpoints"]
    running = asyncio.create_task(manager.run())
    try:
        # Listed before the controller starts, then reconciled from the informer's copy.
        await until(lambda: endpoints.endpoints == {"member1": "https://member1:6443"}, "member1 listed")

        await store.create(cluster("member2", "https://member2:6443"))
        await until(lambda: endpoints.endpoints.get("member2") == "https://member2:6443", "member2 added")

        def move(c: cluster_pb2.Cluster) -> None:
            c.spec.api_endpoint = "https://member1.example:6443"

        await store.mutate(registry.CLUSTER, "", "member1", move)
        await until(lambda: endpoints.endpoints["member1"] == "https://member1.example:6443", "member1 moved")

        await store.delete(registry.CLUSTER, "", "member2")
        await until(lambda: "member2" not in endpoints.endpoints, "member2 deleted")
        assert manager.healthy, manager.down
    finally:
        manager.stop()
        await running
