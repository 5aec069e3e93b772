"""What the scheduler records of a binding's generation once it has looked at it: that it did
(`status.schedulerObservedGeneration`), and that its last decision, unchanged, stands for it (the
Scheduled condition's observedGeneration).

One rule for the scheduler's own writes (services/scheduler/reconciler.py) and for the task
drop, which records it for the scheduler in its own write when the drop cannot change the
decision (flotilla/scheduler/task_drop.py): so the field has one owner's rule however it is
written (docs/architecture.md, "Who writes what").
"""

from __future__ import annotations

from datetime import datetime

from flotilla.api.bindings import Binding
from flotilla.api.conditions import get_condition, set_condition
from flotilla.rules.scheduler_state import SCHEDULED


def observe(binding: Binding) -> bool:
    """Record the binding's current generation as looked at; whether that changed anything."""
    generation = binding.metadata.generation
    if binding.status.scheduler_observed_generation == generation:
        return False
    binding.status.scheduler_observed_generation = generation
    return True


def carry_scheduled(binding: Binding, now: datetime) -> bool:
    """The Scheduled condition, unchanged in what it says, recorded for the current generation."""
    scheduled = get_condition(binding.status.conditions, SCHEDULED)
    if scheduled is None:
        return False
    return set_condition(binding.status.conditions, SCHEDULED, scheduled.status, scheduled.reason,
                         scheduled.message, now, binding.metadata.generation)
