"""Taints and tolerations, matched the way Kubernetes matches them."""

from __future__ import annotations

import pytest

from flotilla.api import taints
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    TAINT_CLUSTER_NOT_READY,
    TAINT_CLUSTER_UNREACHABLE,
)
from flotilla.api.v1.meta_pb2 import Taint, Toleration

NOT_READY_EXEC = Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_EXECUTE)
NOT_READY_SCHED = Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_SCHEDULE)
UNREACHABLE_EXEC = Taint(key=TAINT_CLUSTER_UNREACHABLE, effect=EFFECT_NO_EXECUTE)
MAINTENANCE = Taint(key="maintenance", value="planned", effect=EFFECT_NO_SCHEDULE)


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "", seconds: int | None = None) -> Toleration:
    t = Toleration(key=key, operator=operator, value=value, effect=effect)
    if seconds is not None:
        t.toleration_seconds = seconds
    return t


CASES = [
    # Exists
    ("exists same key+effect", tol(TAINT_CLUSTER_NOT_READY, "Exists", effect="NoExecute"), NOT_READY_EXEC, True),
    ("exists other effect", tol(TAINT_CLUSTER_NOT_READY, "Exists", effect="NoSchedule"), NOT_READY_EXEC, False),
    ("exists other key", tol(TAINT_CLUSTER_UNREACHABLE, "Exists", effect="NoExecute"), NOT_READY_EXEC, False),
    ("exists ignores value", tol("maintenance", "Exists", value="x"), MAINTENANCE, True),
    ("exists empty effect matches all effects", tol(TAINT_CLUSTER_NOT_READY, "Exists"), NOT_READY_SCHED, True),
    ("exists empty key matches every taint", tol("", "Exists"), MAINTENANCE, True),
    ("exists empty key, effect must match", tol("", "Exists", effect="NoExecute"), MAINTENANCE, False),
    ("exists empty key with effect", tol("", "Exists", effect="NoExecute"), UNREACHABLE_EXEC, True),
    # Equal
    ("equal same value", tol("maintenance", "Equal", "planned", "NoSchedule"), MAINTENANCE, True),
    ("equal value mismatch", tol("maintenance", "Equal", "unplanned", "NoSchedule"), MAINTENANCE, False),
    ("equal empty value vs set value", tol("maintenance", "Equal", "", "NoSchedule"), MAINTENANCE, False),
    ("equal empty values", tol(TAINT_CLUSTER_NOT_READY, "Equal", effect="NoExecute"), NOT_READY_EXEC, True),
    ("equal empty effect matches all", tol("maintenance", "Equal", "planned"), MAINTENANCE, True),
    ("equal other key", tol("other", "Equal", "planned"), MAINTENANCE, False),
    ("equal empty key matches nothing", tol("", "Equal", ""), NOT_READY_EXEC, False),
    # Operator "" means Equal
    ("empty operator is equal", tol("maintenance", "", "planned", "NoSchedule"), MAINTENANCE, True),
    ("empty operator value mismatch", tol("maintenance", "", "other", "NoSchedule"), MAINTENANCE, False),
    ("empty operator empty key", tol("", "", ""), NOT_READY_EXEC, False),
    # Anything else tolerates nothing
    ("unknown operator", tol("maintenance", "Lt", "planned"), MAINTENANCE, False),
    ("operator is case sensitive", tol("maintenance", "exists"), MAINTENANCE, False),
    ("effect is case sensitive", tol(TAINT_CLUSTER_NOT_READY, "Exists", effect="noexecute"), NOT_READY_EXEC, False),
]


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_toleration_tolerates_taint(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert taints.toleration_tolerates_taint(toleration, taint) is tolerated


def test_tolerations_tolerate_taint() -> None:
    tolerations = [tol("a", "Exists"), tol(TAINT_CLUSTER_NOT_READY, "Exists", effect="NoExecute")]
    assert taints.tolerations_tolerate_taint(tolerations, NOT_READY_EXEC)
    assert not taints.tolerations_tolerate_taint(tolerations, UNREACHABLE_EXEC)
    assert not taints.tolerations_tolerate_taint([], NOT_READY_EXEC)


def test_get_matching_tolerations() -> None:
    not_ready = tol(TAINT_CLUSTER_NOT_READY, "Exists", effect="NoExecute", seconds=30)
    unreachable = tol(TAINT_CLUSTER_UNREACHABLE, "Exists", effect="NoExecute")
    anything = tol("", "Exists")
    assert taints.get_matching_tolerations([], []) == (True, [])
    assert taints.get_matching_tolerations([NOT_READY_EXEC], []) == (False, [])
    assert taints.get_matching_tolerations([NOT_READY_EXEC, UNREACHABLE_EXEC], [not_ready, unreachable]) == (
        True,
        [not_ready, unreachable],
    )
    assert taints.get_matching_tolerations([NOT_READY_EXEC, MAINTENANCE], [not_ready, unreachable]) == (False, [])
    # The first tolerating toleration is the one used.
    assert taints.get_matching_tolerations([NOT_READY_EXEC], [anything, not_ready]) == (True, [anything])


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        ([], 0),
        ([None], None),
        ([None, None], None),
        ([30], 30),
        ([600, 30, None], 30),
        ([600, 0], 0),
        ([600, -5], 0),
    ],
)
def test_min_toleration_seconds(seconds: list[int | None], expected: int | None) -> None:
    tolerations = [tol("k", "Exists", seconds=s) for s in seconds]
    assert taints.min_toleration_seconds(tolerations) == expected


@pytest.mark.parametrize(
    ("spec", "key", "value", "effect", "remove"),
    [
        ("maintenance=planned:NoSchedule", "maintenance", "planned", "NoSchedule", False),
        ("cluster.karmada.io/not-ready:NoExecute", TAINT_CLUSTER_NOT_READY, "", "NoExecute", False),
        ("dedicated=:PreferNoSchedule", "dedicated", "", "PreferNoSchedule", False),
        ("maintenance:NoSchedule-", "maintenance", "", "NoSchedule", True),
        ("maintenance-", "maintenance", "", "", True),
    ],
)
def test_parse_taint_spec(spec: str, key: str, value: str, effect: str, remove: bool) -> None:
    taint, removal = taints.parse_taint_spec(spec)
    assert (taint.key, taint.value, taint.effect, removal) == (key, value, effect, remove)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("maintenance", "expected key"),
        ("maintenance=planned", "expected key"),
        ("k:Sometimes", "invalid taint effect"),
        ("k:NoSchedule:x", "invalid taint spec"),
        ("a=b=c:NoSchedule", "invalid taint spec"),
        ("k=v:NoSchedule-", "a removal names only"),
        ("=v:NoSchedule", "invalid taint key"),
        ("bad key:NoSchedule", "invalid taint key"),
        ("Bad_Prefix/k:NoSchedule", "invalid taint key"),
        ("k=bad value:NoSchedule", "invalid taint value"),
        ("k=" + "v" * 64 + ":NoSchedule", "invalid taint value"),
    ],
)
def test_parse_taint_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        taints.parse_taint_spec(spec)


def test_add_and_remove_taints_by_key_and_effect() -> None:
    from flotilla.api.v1.cluster_pb2 import ClusterSpec

    spec = ClusterSpec()
    stamped = Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_EXECUTE)
    stamped.time_added.FromSeconds(1000)
    assert taints.add_taint(spec.taints, stamped)
    assert not taints.add_taint(spec.taints, Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_EXECUTE))
    assert spec.taints[0].time_added.seconds == 1000  # an identical taint keeps its timeAdded
    assert taints.add_taint(spec.taints, NOT_READY_SCHED)
    assert taints.add_taint(spec.taints, MAINTENANCE)
    assert taints.add_taint(spec.taints, Taint(key="maintenance", value="extended", effect=EFFECT_NO_SCHEDULE))
    assert [(t.key, t.value, t.effect) for t in spec.taints] == [
        (TAINT_CLUSTER_NOT_READY, "", EFFECT_NO_EXECUTE),
        (TAINT_CLUSTER_NOT_READY, "", EFFECT_NO_SCHEDULE),
        ("maintenance", "extended", EFFECT_NO_SCHEDULE),
    ]
    assert taints.find_taint(spec.taints, "maintenance", EFFECT_NO_SCHEDULE) is not None
    assert taints.find_taint(spec.taints, "maintenance", EFFECT_NO_EXECUTE) is None

    assert taints.remove_taint(spec.taints, TAINT_CLUSTER_NOT_READY, EFFECT_NO_SCHEDULE)
    assert not taints.remove_taint(spec.taints, TAINT_CLUSTER_NOT_READY, EFFECT_NO_SCHEDULE)
    assert taints.remove_taint(spec.taints, "maintenance")
    assert [(t.key, t.effect, t.time_added.seconds) for t in spec.taints] == [
        (TAINT_CLUSTER_NOT_READY, EFFECT_NO_EXECUTE, 1000)
    ]


def test_taint_helpers_work_on_plain_lists() -> None:
    listed: list[Taint] = []
    assert taints.add_taint(listed, MAINTENANCE)
    assert taints.remove_taint(listed, "maintenance", EFFECT_NO_SCHEDULE)
    assert listed == []
