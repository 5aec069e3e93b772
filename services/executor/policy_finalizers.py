"""Policy finalizers, keyed by policy, `<Kind>:<namespace>/<name>`: lets a deleting policy go (its
claims are taken off by the template passes its deletion triggers)."""

from __future__ import annotations

import contextlib
from typing import TypeVar

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.keys import split_key
from flotilla.api.registry import ResourceType
from flotilla.api.wellknown import CPP_FINALIZER, PP_FINALIZER
from flotilla.runtime.controller import Result
from flotilla.store import NotFound, ObjectStore
from services.executor import policy_match, works

P = TypeVar("P", bound=policy_match.Policy)


class PolicyFinalizerReconciler:
    """Removes the policy-controller finalizer admission puts on policies, once they are deleting."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def reconcile(self, key: str) -> Result | None:
        kind, _, object_key = key.partition(":")
        namespace, name = split_key(object_key)
        if kind == registry.PROPAGATION_POLICY.kind:
            await self._release(registry.PROPAGATION_POLICY, PP_FINALIZER, namespace, name)
        else:
            await self._release(registry.CLUSTER_PROPAGATION_POLICY, CPP_FINALIZER, namespace, name)
        return None

    async def _release(self, rt: ResourceType[P], finalizer: str, namespace: str, name: str) -> None:
        def change(policy: P) -> bool:
            if not works.is_deleting(policy) or finalizer not in policy.metadata.finalizers:
                return False
            policy.metadata.finalizers.remove(finalizer)
            return True

        with contextlib.suppress(NotFound):
            await self.store.mutate(rt, namespace, name, change)
