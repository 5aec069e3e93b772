"""Replica division (docs/karmada-rules.md §8.5): how many replicas each selected cluster gets.

Pure functions over names and numbers. Results are lists of (cluster, replicas)
in the order Karmada writes them into spec.clusters, so a binding scheduled by
Flotilla and by Karmada reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from flotilla.rules.apportionment import webster

Targets = list[tuple[str, int]]


class Unschedulable(Exception):
    """The clusters cannot hold the replicas (Karmada's UnschedulableError)."""


def merge(old: Sequence[tuple[str, int]], new: Iterable[tuple[str, int]]) -> Targets:
    """Karmada's `MergeTargetClusters`: add `new` onto `old`, keeping `old`'s order and
    appending clusters that only `new` has in `new`'s order."""
    added = dict(new)
    merged = [(name, replicas + added.pop(name, 0)) for name, replicas in old]
    merged.extend((name, replicas) for name, replicas in added.items())
    return merged


def without_zero(targets: Iterable[tuple[str, int]]) -> Targets:
    return [(name, replicas) for name, replicas in targets if replicas > 0]


def duplicated(selected: Sequence[str], replicas: int) -> Targets:
    """Every selected cluster runs all replicas."""
    return [(name, replicas) for name in selected]


def static_weight(replicas: int, weights: Mapping[str, int], uid: str = "") -> Targets:
    """A full recomputation by the weights (clusters with weight 0 take no part);
    the previous result plays no role, so healthy clusters may grow on failover."""
    positive = {name: weight for name, weight in weights.items() if weight > 0}
    return without_zero(webster(replicas, positive, uid=uid))


def _sorted_by_capacity(weights: Iterable[tuple[str, int]]) -> Targets:
    # Karmada sorts with Go's sort.Sort, which for the few clusters a binding has behaves
    # like a stable insertion sort: equal capacities keep the candidates' order.
    return sorted(weights, key=lambda item: -item[1])


def _divide(
    target: int, weights: Targets, used: frozenset[str], aggregated: bool, uid: str
) -> Targets:
    """Place `target` replicas over `weights` (already sorted by capacity)."""
    if aggregated:
        # Fewest clusters: clusters already running replicas first (relative order kept),
        # then the shortest prefix that can hold the target.
        weights = [w for w in weights if w[0] in used] + [w for w in weights if w[0] not in used]
        total = 0
        for i, (_, weight) in enumerate(weights):
            total += weight
            if total >= target:
                weights = weights[: i + 1]
                break
    return webster(target, dict(weights), uid=uid)


def dynamic(
    candidates: Sequence[str],
    previous: Sequence[tuple[str, int]],
    replicas: int,
    allocatable: Mapping[str, int],
    *,
    aggregated: bool = False,
    fresh: bool = False,
    uid: str = "",
    tiers: Mapping[str, int] | None = None,
) -> Targets:
    """Divided by available replicas (dynamic weight) or Aggregated.

    `candidates` are the selected clusters in selection order; `previous` is spec.clusters;
    `allocatable` is how many more replicas each candidate can take now; `fresh` is an
    explicit reschedule (nothing previous is kept); `tiers` numbers each candidate's
    clusterAffinities overflow term (0 = primary), filled in order.

    Steady mode keeps what runs on clusters that are still candidates: scaling up (and
    failover, which is a scale-up of the evicted share) places only the missing replicas;
    scaling down shrinks the previous result proportionally without adding clusters.
    """
    chosen = set(candidates)
    scheduled = [(name, r) for name, r in previous if name in chosen]
    assigned = sum(r for _, r in scheduled)
    if fresh:
        held = dict(scheduled)
        weights = _sorted_by_capacity((name, allocatable.get(name, 0) + held.get(name, 0)) for name in candidates)
        return _in_tiers(replicas, weights, frozenset(), aggregated, uid, tiers)
    if assigned > replicas:
        weights = _sorted_by_capacity(scheduled)
        return _in_tiers(replicas, weights, frozenset(), aggregated, uid, None)
    if assigned == replicas:
        return list(scheduled)
    weights = _sorted_by_capacity((name, allocatable.get(name, 0)) for name in candidates)
    used = frozenset(name for name, r in scheduled if r > 0)
    added = _in_tiers(replicas - assigned, weights, used, aggregated, uid, tiers)
    return merge(scheduled, added)


def _in_tiers(
    target: int,
    weights: Targets,
    used: frozenset[str],
    aggregated: bool,
    uid: str,
    tiers: Mapping[str, int] | None,
) -> Targets:
    available = sum(weight for _, weight in weights)
    if available < target:
        raise Unschedulable(f"Clusters available replicas {available} are not enough to schedule.")
    levels = sorted({(tiers or {}).get(name, 0) for name, _ in weights})
    if len(levels) <= 1:
        return _divide(target, weights, used, aggregated, uid)
    # Overflow terms only take what the terms before them could not hold.
    result: Targets = []
    remaining = target
    for level in levels:
        tier = [w for w in weights if (tiers or {}).get(w[0], 0) == level]
        take = min(remaining, sum(weight for _, weight in tier))
        if take > 0:
            result = merge(result, _divide(take, tier, used, aggregated, uid))
            remaining -= take
    return result
