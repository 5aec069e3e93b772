"""A hostile ResourceInterpreterCustomization in a running plane (issue 35), end to end: its health
script (the backtracking `string.find` of the issue) applies to 100 ConfigMaps propagated to
member2, and while the executor interprets them, a failover of 10 bindings from member1 to
member2 completes within the usual deadline. The ConfigMaps' health reads Unknown with a
Warning Event naming the customization, and the executor keeps its shards and serves throughout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from flotilla.api import registry
from flotilla.api.keys import execution_namespace
from flotilla.cli.status import collect
from flotilla.interpreter.pool import OUTCOMES
from flotilla.store import Store
from flotilla.store.shards import held_shards
from tests.e2e.failover_support import Plane, eventually, history, placed, started_plane
from tests.e2e.metrics_support import scrape_replicas, total
from tests.interpreter_support import HOSTILE, health_script

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

CUSTOMIZATION = "hostile-configmaps"
CONFIG_MAPS = 100
DEPLOYMENTS = 10
# What tests/e2e/test_failover.py gives a failover on the demo profile.
FAILOVER_DEADLINE = 90


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with started_plane(tmp_path_factory, 2) as started:
        yield started


def hostile() -> list[dict[str, object]]:
    """The customization, and the ConfigMaps it applies to, placed on member2."""
    docs: list[dict[str, object]] = [{
        "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": CUSTOMIZATION},
        "spec": {"target": {"apiVersion": "v1", "kind": "ConfigMap"},
                 "customizations": {"healthInterpretation": {
                     "luaScript": health_script(HOSTILE["backtracking-find"])}}},
    }, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "config-maps", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member2"]}}},
    }]
    return docs + [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default"},
                    "data": {"index": str(i)}} for i in range(CONFIG_MAPS)]


def apps() -> list[dict[str, object]]:
    """Deployments split 1:1 between member1 and member2."""
    docs: list[dict[str, object]] = [{
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "apps", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                               "replicaScheduling": {
                                   "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                   "weightPreference": {"staticWeightList": [
                                       {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                                       {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}}},
    }]
    return docs + [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": f"app-{i}", "namespace": "default"},
                    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": f"app-{i}"}},
                             "template": {"metadata": {"labels": {"app": f"app-{i}"}},
                                          "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}
                   for i in range(DEPLOYMENTS)]


@contextlib.asynccontextmanager
async def executor_shares(plane: Plane) -> AsyncIterator[list[tuple[frozenset[str], bool]]]:
    """Which executor replicas hold shards, and whether every executor replica serves, every half second."""
    store = await Store.connect(plane.endpoint)
    seen: list[tuple[frozenset[str], bool]] = []

    async def sample() -> None:
        while True:
            held = await held_shards(store, "executor") or {}
            serving = all(s.health == "SERVING" for s in await collect(store) if s.endpoint.service == "executor")
            seen.append((frozenset(i for i, shards in held.items() if shards), serving))
            await asyncio.sleep(0.5)

    task = asyncio.create_task(sample())
    try:
        yield seen
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()


async def test_a_failover_completes_while_a_hostile_script_is_interpreted(plane: Plane, tmp_path: Path) -> None:
    (tmp_path / "apps.yaml").write_text(yaml.safe_dump_all(apps()))
    (tmp_path / "hostile.yaml").write_text(yaml.safe_dump_all(hostile()))
    async with (history(plane, registry.WORK) as works, history(plane, registry.RESOURCE_BINDING) as rbs,
                executor_shares(plane) as shares):
        await plane.ok("apply", "-f", str(tmp_path / "apps.yaml"))
        keys = [f"default/app-{i}-deployment" for i in range(DEPLOYMENTS)]
        await rbs.until(lambda: all(placed(rbs.get(k)) == [("member1", 1), ("member2", 1)] for k in keys), 90,
                        "the apps split between member1 and member2")
        before = await scrape_replicas(plane, "executor")

        def config_map_health() -> list[str]:
            return [s.health for w in works.informer.list() if w.metadata.namespace == execution_namespace("member2")
                    for s in w.status.manifest_statuses if s.identifier.kind == "ConfigMap"]

        # The failover, and the hostile script's objects, at the same time.
        await plane.ok("apply", "-f", str(tmp_path / "hostile.yaml"), timeout=120)
        await plane.fault("member1", "down")
        await rbs.until(lambda: all(placed(rbs.get(k)) == [("member2", 2)] for k in keys), FAILOVER_DEADLINE,
                        "every app failed over to member2")
        await works.until(lambda: config_map_health().count("Unknown") == CONFIG_MAPS, 60,
                          "every ConfigMap's health Unknown")

        store = await Store.connect(plane.endpoint)
        try:
            listed = await store.list(registry.EVENT, execution_namespace("member2"))
        finally:
            await store.close()
        warnings = [e for e in listed.items if e.reason == "InterpretHealthFailed"]
        assert warnings and all(e.type == "Warning" and f"ResourceInterpreterCustomization {CUSTOMIZATION}: "
                                in e.message for e in warnings), [e.message for e in warnings[:3]]

        # The script ran, overran, and was suspended rather than run for every object. Every
        # ConfigMap reading Unknown does not say every call has been counted yet (one run read 2
        # timeouts and no suspension at that moment): the counters are awaited, not read once.
        after = await scrape_replicas(plane, "executor")

        def calls(result: str) -> float:
            metric = "flotilla_interpreter_calls_total"
            return total(after, metric, result=result) - total(before, metric, result=result)

        async def overran_and_suspended() -> bool:
            nonlocal after
            after = await scrape_replicas(plane, "executor")
            # An overrun is a timeout, or a kill when the worker did not stop at its limit (a
            # loaded machine's worker may not be scheduled in time to see its own limit).
            return calls("timeout") + calls("killed") >= 1 and calls("suspended") >= 1

        try:
            await eventually(overran_and_suspended, 150, "an overrun and a suspension counted")
        except AssertionError as e:
            # Which outcomes were counted instead says where to look (an error resets the overruns).
            seen = {result: calls(result) for result in OUTCOMES}
            raise AssertionError(f"{e}; the executors' interpreter calls by result since: {seen}") from None
        assert calls("ok") == 0

        assert len(shares) > 10
        holders = {holders for holders, _ in shares}
        assert len(holders) == 1 and frozenset() not in holders, f"the executor's shards moved: {holders}"
        assert all(serving for _, serving in shares), "an executor replica stopped serving"
    await plane.fault("member1", "recover")
