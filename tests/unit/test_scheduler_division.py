"""Replica division (docs/karmada-rules.md §8.5): Webster with Karmada's tie-break, static and dynamic weights."""

from __future__ import annotations

import re

import pytest

from flotilla.rules.apportionment import names_descending, webster
from flotilla.scheduler.division import (
    Unschedulable,
    duplicated,
    dynamic,
    merge,
    static_weight,
)

ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
WIKIPEDIA = {"PartyA": 100000, "PartyB": 80000, "PartyC": 30000, "PartyD": 20000}


@pytest.mark.parametrize(("seats", "expected"), [
    # Karmada's webstermethod_test: the Sainte-Laguë example on Wikipedia, round by round. In
    # round 6 A (100000/5) and D (20000/1) tie exactly: D has fewer seats and wins.
    (1, [1, 0, 0, 0]),
    (2, [1, 1, 0, 0]),
    (3, [2, 1, 0, 0]),
    (4, [2, 1, 1, 0]),
    (5, [2, 2, 1, 0]),
    (6, [2, 2, 1, 1]),
    (7, [3, 2, 1, 1]),
    (8, [3, 3, 1, 1]),
])
def test_webster_classic_example(seats: int, expected: list[int]) -> None:
    assert webster(seats, WIKIPEDIA) == list(zip(sorted(WIKIPEDIA), expected, strict=True))


@pytest.mark.parametrize(("seats", "votes", "initial", "expected"), [
    (1, {}, None, []),
    (0, {"PartyA": 100, "PartyB": 200}, None, [("PartyA", 0), ("PartyB", 0)]),
    # Ties of priority go to fewer seats, then to the name (ascending without a UID).
    (1, {"PartyA": 1, "PartyB": 2}, None, [("PartyA", 0), ("PartyB", 1)]),
    (1, {"PartyA": 0, "PartyB": 0}, {"PartyA": 2, "PartyB": 1}, [("PartyA", 2), ("PartyB", 2)]),
    (1, {"PartyA": 1, "PartyB": 1}, None, [("PartyA", 1), ("PartyB", 0)]),
    # Parties that start with seats compete with their votes; without votes they get nothing new.
    (2, {"NewParty1": 1, "NewParty2": 1}, {"OldParty": 0}, [("NewParty1", 1), ("NewParty2", 1), ("OldParty", 0)]),
    (2, {"OldParty": 1, "NewParty": 1}, {"OldParty": 1}, [("NewParty", 2), ("OldParty", 1)]),
    (2, {"PartyA": 100}, {"PartyB": 3}, [("PartyA", 2), ("PartyB", 3)]),
])
def test_webster_table(seats: int, votes: dict[str, int], initial: dict[str, int] | None,
                       expected: list[tuple[str, int]]) -> None:
    assert webster(seats, votes, initial) == expected


def test_uid_parity_decides_the_name_order_of_ties() -> None:
    assert names_descending(ODD_UID)
    assert not names_descending(EVEN_UID)
    assert not names_descending("")
    assert webster(1, {"a": 1, "b": 1}, uid=ODD_UID) == [("a", 0), ("b", 1)]
    assert webster(1, {"a": 1, "b": 1}, uid=EVEN_UID) == [("a", 1), ("b", 0)]
    # Fewer seats still come before the name.
    assert webster(3, {"a": 1, "b": 1}, uid=ODD_UID) == [("a", 1), ("b", 2)]
    assert webster(3, {"a": 1, "b": 1}, uid=EVEN_UID) == [("a", 2), ("b", 1)]


@pytest.mark.parametrize(("replicas", "weights", "expected"), [
    # The examples of docs/karmada-rules.md §8.5.
    (12, {"m1": 3, "m2": 2, "m3": 1}, [("m1", 6), ("m2", 4), ("m3", 2)]),
    (13, {"m1": 3, "m2": 2, "m3": 1}, [("m1", 7), ("m2", 4), ("m3", 2)]),
    (14, {"m1": 3, "m2": 2, "m3": 1}, [("m1", 7), ("m2", 5), ("m3", 2)]),
    (1, {"m1": 2, "m2": 1}, [("m1", 1)]),
    (2, {"m1": 2, "m2": 1}, [("m1", 1), ("m2", 1)]),
    (3, {"m1": 2, "m2": 1}, [("m1", 2), ("m2", 1)]),
    # The seed: nginx 3 replicas at 1:2, then with member1 gone.
    (3, {"member1": 1, "member2": 2}, [("member1", 1), ("member2", 2)]),
    (3, {"member2": 2}, [("member2", 3)]),
    # Weight 0 takes no part; results are sorted by name whatever the weights.
    (4, {"b": 1, "a": 0, "c": 1}, [("b", 2), ("c", 2)]),
    (0, {"a": 1}, []),
])
def test_static_weight(replicas: int, weights: dict[str, int], expected: list[tuple[str, int]]) -> None:
    assert static_weight(replicas, weights) == expected


def test_duplicated_keeps_the_selection_order() -> None:
    assert duplicated(["m2", "m1"], 3) == [("m2", 3), ("m1", 3)]


def test_merge_keeps_old_order_and_appends_new_clusters() -> None:
    assert merge([("b", 1), ("a", 2)], [("a", 1), ("c", 3), ("b", 0)]) == [("b", 1), ("a", 3), ("c", 3)]


CAPACITY = {"m1": 6, "m2": 8, "m3": 10}


@pytest.mark.parametrize(("case", "previous", "replicas", "allocatable", "options", "expected"), [
    ("first schedule by available replicas", [], 12, CAPACITY, {}, [("m1", 3), ("m2", 4), ("m3", 5)]),
    ("aggregated: fewest clusters", [], 12, CAPACITY, {"aggregated": True}, [("m2", 5), ("m3", 7)]),
    ("scale up keeps what runs", [("m1", 2), ("m2", 2)], 10, CAPACITY, {}, [("m1", 4), ("m2", 4), ("m3", 2)]),
    ("scale down is proportional", [("m1", 4), ("m2", 6)], 5, CAPACITY, {}, [("m1", 2), ("m2", 3)]),
    ("steady keeps the result", [("m2", 6), ("m1", 4)], 10, CAPACITY, {}, [("m2", 6), ("m1", 4)]),
    ("failover: the evicted share moves", [("m1", 6)], 12, {"m1": 3, "m2": 3}, {},
     [("m1", 9), ("m2", 3)]),
    ("entries of clusters no longer selected are re-placed", [("m1", 6), ("m3", 6)], 12, {"m1": 3, "m2": 3}, {},
     [("m1", 9), ("m2", 3)]),
    ("aggregated failover prefers used clusters", [("m1", 4)], 8, {"m1": 6, "m3": 10}, {"aggregated": True},
     [("m1", 8)]),
    ("fresh: room plus what runs, from scratch", [("m1", 2), ("m2", 2)], 4, CAPACITY, {"fresh": True},
     [("m1", 1), ("m2", 2), ("m3", 1)]),
    ("overflow tier only takes what the primary cannot", [], 6, {"m1": 4, "m2": 10},
     {"tiers": {"m1": 0, "m2": 1}}, [("m1", 4), ("m2", 2)]),
])
def test_dynamic(case: str, previous: list[tuple[str, int]], replicas: int, allocatable: dict[str, int],
                 options: dict[str, object], expected: list[tuple[str, int]]) -> None:
    candidates = sorted(allocatable)
    result = dynamic(candidates, previous, replicas, allocatable, **options)  # type: ignore[arg-type]
    assert [t for t in result if t[1] > 0] == expected, case


@pytest.mark.parametrize("aggregated", [False, True])
def test_dynamic_without_room_is_unschedulable(aggregated: bool) -> None:
    with pytest.raises(Unschedulable, match=re.escape("Clusters available replicas 24 are not enough to schedule.")):
        dynamic(sorted(CAPACITY), [], 30, CAPACITY, aggregated=aggregated)


def test_scale_up_needs_room_only_for_the_new_replicas() -> None:
    # 20 run already; 4 more fit in 6 free even though 24 would not.
    assert dynamic(["m1"], [("m1", 20)], 24, {"m1": 6}) == [("m1", 24)]
