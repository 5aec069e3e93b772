"""The failover benchmark's layout: the failed member holds exactly the bindings asked for, each
has one backup among the survivors, and the simulated nodes have room for the failed member's
share before the failover as well as for every survivor's after it."""

from __future__ import annotations

from collections import Counter

import pytest

from flotilla.benchmarks.failover import BenchError, Layout


def test_the_victims_hold_their_share_and_every_member_fits() -> None:
    layout = Layout.plan(20, 3000, [10, 100])
    primaries = Counter(p for p, _ in layout.pairs)
    assert layout.victims == [("member1", 10), ("member2", 100)]
    assert primaries["member1"] == 10 and primaries["member2"] == 100
    assert all(b not in ("member1", "member2") for _, b in layout.pairs)
    big = Layout.plan(20, 3000, [1000])
    assert big.node_pods(1) * 3 >= 1000, "the failed member's thousand fit before the failover"
    assert big.node_pods(2) * 3 >= 2000


def test_too_few_clusters_or_bindings_are_refused() -> None:
    with pytest.raises(BenchError, match="--clusters"):
        Layout.plan(1, 10, [1])
    with pytest.raises(BenchError, match="--bindings"):
        Layout.plan(5, 50, [10, 100])
