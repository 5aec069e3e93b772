"""A ResourceInterpreterCustomization that does not decode, never seen readable: its health rules
are unknown, so no health is interpreted (everything Unknown, with the reason) rather than read
without them; once it reads, its rules apply (issue 32: an unknown is never a gone)."""

from __future__ import annotations

import asyncio

from flotilla.api import registry
from flotilla.api.keys import etcd_key
from flotilla.interpreter.health import HealthInterpreter
from flotilla.interpreter.pool import ScriptPool
from flotilla.store.base import payload
from flotilla.store.informer import Informer
from flotilla.store.memory import MemoryStore
from tests.unit.test_interpreter_lua import health_script, ric

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 1},
              "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                                                  "availableReplicas": 2}}


async def test_no_health_is_interpreted_while_a_customization_cannot_be_read() -> None:
    store = MemoryStore()
    key = etcd_key(registry.RESOURCE_INTERPRETER_CUSTOMIZATION.plural, None, "strict")
    store.put_raw(key, b"\x00not a customization")
    customizations = Informer(store, registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
    running = asyncio.create_task(customizations.run())
    pool = ScriptPool(1)
    try:
        await customizations.wait_synced()
        interpreter = HealthInterpreter(runner=pool, unreadable=customizations.unknown)
        blind = await interpreter.interpret(DEPLOYMENT)
        assert blind.health == "Unknown" and "strict" in blind.error and "cannot be read" in blind.error

        # The good value: its rule (this one calls every Deployment Unhealthy) applies.
        store.put_raw(key, payload(ric("strict", health_script("return false"))))
        async with asyncio.timeout(10):
            while customizations.unknown():
                await asyncio.sleep(0.01)
        interpreter.set_customizations(customizations.list())
        assert (await interpreter.interpret(DEPLOYMENT)).health == "Unhealthy"
    finally:
        await pool.close()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

