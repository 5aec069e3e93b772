"""The select step (docs/karmada-rules.md §8.4): ranking, cluster and region spread constraints, group scores."""

from __future__ import annotations

import re
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import policy_pb2
from flotilla.scheduler.plugin_api import ClusterInfo
from flotilla.scheduler.selection import (
    Candidate,
    SpreadError,
    _Group,
    group_score,
    ignores_spread_constraints,
    rank,
    select,
    select_groups,
)


def info(name: str, region: str = "") -> ClusterInfo:
    cluster = codec.from_dict({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                               "metadata": {"name": name}, "spec": {"region": region}})
    return ClusterInfo.from_cluster(cluster)  # type: ignore[arg-type]


def candidate(name: str, score: int = 0, available: int = 10, region: str = "", tier: int = 0) -> Candidate:
    return Candidate(name, score, available, tier, info(name, region))


def placement(data: dict[str, Any]) -> policy_pb2.Placement:
    parsed = codec.parse_as(policy_pb2.Placement, data)
    assert isinstance(parsed, policy_pb2.Placement)
    return parsed


DIVIDED_DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                         "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
DUPLICATED = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


def names(selected: list[Candidate]) -> list[str]:
    return [c.name for c in selected]


def test_rank_by_tier_score_room_name() -> None:
    ranked = rank([candidate("d", 0, 5), candidate("c", 100, 1), candidate("b", 0, 9), candidate("a", 0, 9),
                   candidate("e", 100, 50, tier=1)])
    assert names(ranked) == ["c", "a", "b", "d", "e"]


@pytest.mark.parametrize(("strategy", "ignored"), [
    ({}, False),
    (DUPLICATED, False),
    (DIVIDED_DYNAMIC, False),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}, True),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 1}]}}}, True),
    # A weightPreference with neither list nor dynamic weight does not count as static.
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {}}}, False),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}, False),
])
def test_static_weights_ignore_spread_constraints(strategy: dict[str, Any], ignored: bool) -> None:
    assert ignores_spread_constraints(placement(strategy)) is ignored


def test_no_constraints_selects_everything_ranked() -> None:
    ranked = rank([candidate("b"), candidate("a")])
    assert names(select(ranked, placement({}), 3)) == ["a", "b"]


def test_cluster_mode_swaps_in_room_karmada_example() -> None:
    # Karmada's selectClustersByAvailableResource: need 80 on 2 clusters; member1 and member2
    # score highest but hold 70, so member2 (30) is swapped for member3 (60).
    ranked = rank([candidate("member1", 60, 40), candidate("member2", 50, 30), candidate("member3", 40, 60)])
    spread = {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}], **DIVIDED_DYNAMIC}
    assert names(select(ranked, placement(spread), 80)) == ["member1", "member3"]
    with pytest.raises(SpreadError, match="no enough resource when selecting 2 clusters"):
        select(ranked, placement(spread), 101)


def test_cluster_mode_duplicated_ignores_room() -> None:
    ranked = rank([candidate("a", 0, 1), candidate("b", 0, 1), candidate("c", 0, 1)])
    spread = {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}], **DUPLICATED}
    assert names(select(ranked, placement(spread), 1000)) == ["a", "b"]


def test_cluster_mode_min_groups() -> None:
    spread = {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3}], **DUPLICATED}
    message = "the number of feasible clusters is less than spreadConstraint.MinGroups"
    with pytest.raises(SpreadError, match=re.escape(message)):
        select(rank([candidate("a"), candidate("b")]), placement(spread), 1)


def test_zone_or_provider_alone_is_not_supported() -> None:
    spread = {"spreadConstraints": [{"spreadByField": "provider", "minGroups": 1, "maxGroups": 2}], **DUPLICATED}
    with pytest.raises(SpreadError, match="just support cluster and region spread constraint"):
        select(rank([candidate("a")]), placement(spread), 1)


def test_group_score_duplicated_counts_clusters_that_hold_all_replicas() -> None:
    members = [candidate("a", 100, 10), candidate("b", 0, 10), candidate("c", 0, 1)]
    assert group_score(members, placement(DUPLICATED), 5, 1, 1) == 2 * 1000 + 100 // 2
    assert group_score([candidate("c", 0, 1)], placement(DUPLICATED), 5, 1, 1) == 0


def test_group_score_divided() -> None:
    dynamic = placement(DIVIDED_DYNAMIC)
    # Target ceil(10 / 2) = 5, at least 2 clusters: a (3) + b (4) reach it.
    members = [candidate("a", 100, 3), candidate("b", 0, 4), candidate("c", 0, 9)]
    assert group_score(members, dynamic, 10, 2, 1) == 5 * 1000 + 100 // 2
    # Not enough room anywhere: the room itself counts, and the score over the whole group.
    assert group_score([candidate("a", 100, 1), candidate("b", 0, 1)], dynamic, 10, 1, 1) == 2 * 1000 + 100 // 2


def test_select_groups_prefers_weight_then_value_then_first_found() -> None:
    groups = [_Group("r1", 2, 2000), _Group("r2", 1, 1000), _Group("r3", 3, 3000)]
    assert [g.name for g in select_groups(groups, 2, 2, 3)] == ["r3", "r1"]
    assert [g.name for g in select_groups(groups, 1, 1, 2)] == ["r3"]
    assert select_groups(groups, 1, 1, 4) == []


def test_select_groups_prefers_a_feasible_prefix_of_the_winner() -> None:
    # DFS finds [small, big] (weight 15) and [big] (weight 10). The heavier one, ordered by
    # weight, is [big, small]: [big] is a strict prefix that is feasible alone, so it wins.
    groups = [_Group("small", 1, 5), _Group("big", 3, 10)]
    assert [g.name for g in select_groups(groups, 1, 2, 2)] == ["big"]


def test_region_mode() -> None:
    ranked = rank([candidate("m1", region="r1"), candidate("m2", region="r1"), candidate("m3", region="r2"),
                   candidate("m4", region="r3"), candidate("m5", region="r3"), candidate("m6", region="r3")])
    spread = {"spreadConstraints": [{"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
                                    {"spreadByField": "cluster", "minGroups": 3, "maxGroups": 4}], **DUPLICATED}
    assert names(select(ranked, placement(spread), 2)) == ["m4", "m1", "m2", "m5"]
    spread["spreadConstraints"][0] = {"spreadByField": "region", "minGroups": 4, "maxGroups": 4}
    with pytest.raises(SpreadError, match="feasible region is less than"):
        select(ranked, placement(spread), 2)
