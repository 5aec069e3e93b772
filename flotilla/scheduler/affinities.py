"""clusterAffinities (docs/karmada-rules.md §8.3): the ordered fallback groups a binding may be placed in.

Scheduling starts at the term the binding last settled on and only ever moves down the
list; going back up takes an explicit reschedule, so a placement does not flap back to
the preferred group the moment it looks feasible again.
"""

from __future__ import annotations

from collections.abc import Sequence

from flotilla.api.v1 import policy_pb2


def first_term(terms: Sequence[policy_pb2.ClusterAffinityTerm], observed: str, reschedule: bool) -> int:
    """Index of the term to try first: the observed one, or 0 (none observed, an unknown
    name, or an explicit reschedule pending)."""
    if reschedule or not observed:
        return 0
    for i, term in enumerate(terms):
        if term.affinity_name == observed:
            return i
    return 0


def terms_to_try(placement: policy_pb2.Placement, observed: str, reschedule: bool
                 ) -> list[policy_pb2.ClusterAffinityTerm]:
    terms = placement.cluster_affinities
    return list(terms[first_term(terms, observed, reschedule):])
