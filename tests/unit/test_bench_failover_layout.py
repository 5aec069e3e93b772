"""The failover benchmark's layout: the failed member holds exactly the bindings asked for, each
has one backup among the survivors, and the simulated nodes have room for the failed member's
share before the failover as well as for every survivor's after it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from flotilla.api.events import EventType
from flotilla.api.v1 import work_pb2
from flotilla.plane.benchmarks import failover
from flotilla.plane.benchmarks.failover import BenchError, Layout


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


async def test_a_change_to_any_binding_wakes_the_waits() -> None:
    """The rollout waits on every binding, not only the followed ones of a failover: woken only
    by members' status, the last Healthy report of a quiet plane waited out the whole timeout."""
    watcher = failover.Watcher()
    rb = work_pb2.ResourceBinding()
    rb.metadata.namespace, rb.metadata.name = "bench", "app-00001-deployment"
    await watcher.on_binding(EventType.MODIFIED, rb, None)
    assert watcher.changed.is_set()


def test_leaders_lost_are_counted_per_service_from_the_logs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "executor.log").write_text(
        "x INFO service=executor flotilla.store.leader event=leader-acquired key=/flotilla/election/executor\n"
        "x WARNING service=executor flotilla.store.leader event=leader-lost key=/flotilla/election/executor\n"
        "x WARNING service=executor flotilla.store.leader event=leader-lost key=/flotilla/election/executor\n")
    (logs / "status.log").write_text("x INFO service=status event=cluster-ready cluster=member1\n")
    assert failover.leaders_lost(logs) == {"executor": 2, "status": 0}


def test_keep_logs_copies_the_logs_and_the_trace_file(tmp_path: Path) -> None:
    plane = tmp_path / "plane"
    (plane / "logs").mkdir(parents=True)
    (plane / "logs" / "executor.log").write_text("line\n")
    (plane / "traces.jsonl").write_text("{}\n")
    failover.keep_logs(plane, tmp_path / "kept")
    assert (tmp_path / "kept" / "logs" / "executor.log").read_text() == "line\n"
    assert (tmp_path / "kept" / "traces.jsonl").read_text() == "{}\n"
