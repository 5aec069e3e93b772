"""The select step (docs/karmada-rules.md §8.4): which of the feasible clusters a binding uses, by its
spread constraints.

Pure functions over ranked candidates. Error messages are Karmada's, word for word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flotilla.api.v1 import policy_pb2
from flotilla.scheduler.plugin_api import ClusterInfo

BY_CLUSTER, BY_REGION = "cluster", "region"
DUPLICATED, DIVIDED = "Duplicated", "Divided"
WEIGHTED = "Weighted"
# A group score counts clusters that fit before their scores: scores are 0..100.
WEIGHT_UNIT = 1000
# "Availability does not matter" (Duplicated): Karmada's InvalidReplicas.
ANY_REPLICAS = -1


class SpreadError(Exception):
    """The spread constraints cannot be met by the feasible clusters."""


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    score: int
    # Replicas the cluster could run: what it can still take plus what the binding has there.
    available: int
    # 0 for the primary affinity term, i for its i-th overflow term.
    tier: int
    info: ClusterInfo


def rank(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Overflow tier ↑, score ↓, available ↓, name ↑: the order every later step walks."""
    return sorted(candidates, key=lambda c: (c.tier, -c.score, -c.available, c.name))


def ignores_spread_constraints(placement: policy_pb2.Placement) -> bool:
    """Divided by static weights ignores spread constraints (Karmada's shouldIgnoreSpreadConstraint)."""
    if not placement.HasField("replica_scheduling"):
        return False
    strategy = placement.replica_scheduling
    if strategy.replica_scheduling_type != DIVIDED or strategy.replica_division_preference != WEIGHTED:
        return False
    if not strategy.HasField("weight_preference"):
        return True
    preference = strategy.weight_preference
    return bool(preference.static_weight_list) and not preference.dynamic_weight


def is_duplicated(placement: policy_pb2.Placement) -> bool:
    return (not placement.HasField("replica_scheduling")
            or placement.replica_scheduling.replica_scheduling_type == DUPLICATED)


def select(ranked: Sequence[Candidate], placement: policy_pb2.Placement, replicas: int) -> list[Candidate]:
    """The clusters to assign replicas over, in ranked order (or the order Karmada's
    region selection produces). Raises SpreadError when the constraints cannot be met."""
    constraints = placement.spread_constraints
    if not constraints or ignores_spread_constraints(placement):
        return list(ranked)
    need = ANY_REPLICAS if is_duplicated(placement) else replicas
    by_field = {c.spread_by_field: c for c in constraints}
    if BY_REGION in by_field:
        return _by_region(ranked, by_field[BY_REGION], by_field.get(BY_CLUSTER), placement, replicas)
    if BY_CLUSTER in by_field:
        return _by_cluster(ranked, by_field[BY_CLUSTER], need)
    raise SpreadError("just support cluster and region spread constraint")


def _by_cluster(ranked: Sequence[Candidate], constraint: policy_pb2.SpreadConstraint, need: int) -> list[Candidate]:
    if len(ranked) < constraint.min_groups:
        raise SpreadError("the number of feasible clusters is less than spreadConstraint.MinGroups")
    count = min(len(ranked), constraint.max_groups)
    if need == ANY_REPLICAS:
        return list(ranked[:count])
    chosen, rest = list(ranked[:count]), list(ranked[count:])
    # Walking from the lowest-ranked chosen cluster up, swap in the leftover with the most
    # room (strictly more than the one it replaces) until the chosen ones can hold `need`.
    position = len(chosen) - 1
    while sum(c.available for c in chosen) < need and position >= 0:
        best, most = -1, chosen[position].available
        for i, candidate in enumerate(rest):
            if candidate.available > most:
                best, most = i, candidate.available
        if best >= 0:
            chosen[position], rest[best] = rest[best], chosen[position]
        position -= 1
    if sum(c.available for c in chosen) < need:
        raise SpreadError(f"no enough resource when selecting {count} clusters")
    return chosen


# -- region mode -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Group:
    name: str
    value: int
    weight: int


def group_score(clusters: Sequence[Candidate], placement: policy_pb2.Placement, replicas: int,
                group_min_groups: int, cluster_min_groups: int) -> int:
    """Spec §8.4.1: clusters that can hold the workload first, their scores second."""
    if is_duplicated(placement):
        valid = [c for c in clusters if c.available >= replicas]
        if not valid:
            return 0
        return len(valid) * WEIGHT_UNIT + sum(c.score for c in valid) // len(valid)
    groups = max(group_min_groups, 1)
    target = -(-replicas // groups)
    enough = max(cluster_min_groups, groups)
    available = score = walked = 0
    for cluster in clusters:
        available += cluster.available
        score += cluster.score
        walked += 1
        if walked >= enough and available >= target:
            break
    if available < target:
        return available * WEIGHT_UNIT + score // len(clusters)
    return target * WEIGHT_UNIT + score // walked


def _by_region(ranked: Sequence[Candidate], region: policy_pb2.SpreadConstraint,
               cluster: policy_pb2.SpreadConstraint | None, placement: policy_pb2.Placement,
               replicas: int) -> list[Candidate]:
    cluster = cluster or policy_pb2.SpreadConstraint()
    regions: dict[str, list[Candidate]] = {}
    for candidate in ranked:
        if candidate.info.region:
            regions.setdefault(candidate.info.region, []).append(candidate)
    if len(regions) < region.min_groups:
        raise SpreadError("the number of feasible region is less than spreadConstraint.MinGroups")
    groups = [
        _Group(name, len(members), group_score(members, placement, replicas, region.min_groups, cluster.min_groups))
        for name, members in regions.items()
    ]
    path = select_groups(groups, region.min_groups, region.max_groups, cluster.min_groups)
    if not path:
        raise SpreadError("the number of clusters is less than the cluster spreadConstraint.MinGroups")
    chosen = [regions[group.name][0] for group in path]
    rest = [c for group in path for c in regions[group.name][1:]]
    count = min(len(chosen) + len(rest), cluster.max_groups)
    if count > len(chosen):
        rest.sort(key=lambda c: (-c.score, -c.available, c.name))
        chosen.extend(rest[: count - len(chosen)])
    return chosen


def select_groups(groups: Sequence[_Group], min_groups: int, max_groups: int, target: int) -> list[_Group]:
    """Karmada's selectGroups: every combination of groups (DFS over groups by value ↑,
    weight ↓, name ↑) whose size is within [min, max] and whose value reaches `target`;
    the heaviest wins (then the largest, then the first found), and a winner is replaced
    by a strict prefix of itself that is also feasible."""
    ordered = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    paths: list[tuple[int, int, int, list[_Group]]] = []
    path: list[_Group] = []

    def visit(total: int, begin: int) -> None:
        if total >= target and min_groups <= len(path) <= max_groups:
            members = sorted(path, key=lambda g: (-g.weight, g.name))
            paths.append((sum(g.weight for g in members), sum(g.value for g in members), len(paths), members))
            return
        if len(path) >= max_groups:
            return
        for i in range(begin, len(ordered)):
            path.append(ordered[i])
            visit(total + ordered[i].value, i + 1)
            path.pop()

    visit(0, 0)
    if not paths:
        return []
    paths.sort(key=lambda p: (-p[0], -p[1], p[2]))
    best = paths[0][3]
    for _, _, _, candidate in paths[1:]:
        if len(candidate) < len(best) and all(a.name == b.name for a, b in zip(candidate, best, strict=False)):
            best = candidate
    return best
