"""The failover-history controller: keeps `status.failoverHistory` of ResourceBindings and
ClusterResourceBindings alike (the rules are in flotilla/rules/failover_history.py; the writers of each failover step
keep it up to date in their own writes, and this controller catches whatever they did not).

A pass reads the binding from the informer cache, brings the history up to date with
`failover_history.refresh` (as every writer of the field does) and writes it with one status
compare-and-swap when it changed. A conflict means a newer version is on its way through the
informer, which brings the binding back here. Every record whose recovered_time this pass set is
observed once in `flotilla_failover_recovery_seconds` (a pass whose write fails observes nothing;
the next one sets it again).
"""

from __future__ import annotations

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding, cached
from flotilla.rules.failover_history import refresh
from flotilla.runtime.controller import Result
from flotilla.store import Conflict, NotFound, ObjectStore
from flotilla.store.base import copy_of
from flotilla.store.informer import Informer
from services.eviction.assessment import assess
from services.eviction.graceful import GracefulEvictionConfig, health_of, placement_of
from services.eviction.recovery import observe_recovered


def scheduled(binding: Binding) -> bool:
    return binding.status.scheduler_observed_generation == binding.metadata.generation


class FailoverHistoryReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, bindings: dict[str, Informer[Binding]],
                 graceful: GracefulEvictionConfig | None = None) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings
        self.graceful = graceful or GracefulEvictionConfig()

    async def reconcile(self, key: str) -> Result | None:
        binding = cached(self.bindings, key)
        if binding is None:
            return None
        now = self.clock.now()
        updated = copy_of(binding)
        update = refresh(updated, health_of(binding), scheduled(binding), now)
        if not update.changed:
            return None
        if assess(binding.spec.graceful_eviction_tasks, now, placement_of(binding), self.graceful.timeout).changed:
            # The graceful eviction controller writes this version's tasks, and this same history
            # with them (its recovery time, typically): a write of its own here would be a second.
            # Should that write lose its compare-and-swap, the next version comes back to both.
            return None
        try:
            await self.store.update_status(updated, original=binding)
        except (Conflict, NotFound):
            return None
        observe_recovered(binding, key, update.recovered)
        return None
