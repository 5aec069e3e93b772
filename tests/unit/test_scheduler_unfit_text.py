"""The scheduler's line about ruled-out clusters: a few names per reason, the rest counted."""

from __future__ import annotations

import pytest

from flotilla.scheduler.framework import Unfit
from services.scheduler.reconciler import unfit_text

AFFINITY = "did not match the placement cluster affinity constraint"
TAINT = "had untolerated taint {cluster.karmada.io/not-ready: }"


def ruled_out(plugin: str, reason: str, *clusters: str) -> list[Unfit]:
    return [Unfit(c, plugin, reason) for c in clusters]


@pytest.mark.parametrize(("unfit", "named", "text"), [
    ([], 5, ""),
    (ruled_out("ClusterAffinity", AFFINITY, "m1", "m2"), 5, f"ClusterAffinity({AFFINITY})=m1,m2"),
    (ruled_out("ClusterAffinity", AFFINITY, "m1", "m2", "m3"), 3, f"ClusterAffinity({AFFINITY})=m1,m2,m3"),
    (ruled_out("ClusterAffinity", AFFINITY, *(f"m{i}" for i in range(1, 99))), 5,
     f"ClusterAffinity({AFFINITY})=m1,m2,m3,m4,m5 and 93 more"),
    (ruled_out("ClusterAffinity", AFFINITY, "m1", "m2", "m3") + ruled_out("TaintToleration", TAINT, "m4"), 2,
     f"ClusterAffinity({AFFINITY})=m1,m2 and 1 more; TaintToleration({TAINT})=m4"),
    (ruled_out("ClusterAffinity", AFFINITY, "m1") + ruled_out("TaintToleration", TAINT, "m2")
     + ruled_out("ClusterAffinity", AFFINITY, "m3"), 5,
     f"ClusterAffinity({AFFINITY})=m1,m3; TaintToleration({TAINT})=m2"),
])
def test_unfit_text(unfit: list[Unfit], named: int, text: str) -> None:
    assert unfit_text(unfit, named) == text
