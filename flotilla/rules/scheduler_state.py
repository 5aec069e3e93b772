"""Which bindings a scheduler places, and whether it has decided a binding's generation: read by
the scheduler itself (which bindings are its), by the eviction service (a task waits for the
decision) and by the executor (an evicted binding's aggregation waits for it)."""

from __future__ import annotations

from flotilla.api.bindings import Binding
from flotilla.api.conditions import FALSE, get_condition
from flotilla.api.wellknown import CPP_PERMANENT_ID_LABEL, DEFAULT_SCHEDULER, MANAGED_BY_LABEL, PP_PERMANENT_ID_LABEL

SCHEDULED = "Scheduled"
# A policy (or, for attached bindings, another binding) claimed the binding: Karmada's
# scheduler leaves alone bindings that nothing claims.
CLAIM_LABELS = (PP_PERMANENT_ID_LABEL, CPP_PERMANENT_ID_LABEL, MANAGED_BY_LABEL)


def handled_by(binding: Binding, scheduler_name: str) -> bool:
    """Whether this scheduler places the binding: its schedulerName (empty means the default
    scheduler), scheduling not suspended, and claimed by a policy."""
    spec = binding.spec
    if (spec.scheduler_name or DEFAULT_SCHEDULER) != scheduler_name:
        return False
    if spec.suspension.scheduling:
        return False
    labels = binding.metadata.labels
    return any(labels.get(label) for label in CLAIM_LABELS)


def scheduler_decided(binding: Binding) -> bool:
    """The scheduler has looked at this generation: placed it, or found that no cluster fits
    (a failed decision leaves schedulerObservedGeneration behind; its Scheduled condition
    records the generation)."""
    generation = binding.metadata.generation
    if binding.status.scheduler_observed_generation == generation:
        return True
    scheduled = get_condition(binding.status.conditions, SCHEDULED)
    return scheduled is not None and scheduled.status == FALSE and scheduled.observed_generation == generation
