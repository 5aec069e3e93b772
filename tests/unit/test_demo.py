"""`flotilla demo`'s pure parts: the narrated lines, the timeline, and the step runner's deadlines."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flotilla.api.conditions import set_condition
from flotilla.api.errors import UserError
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.plane.demo import (
    CheckFailed,
    Narrator,
    Seen,
    StepBroken,
    StepTimedOut,
    TimelineEntry,
    dropped_after_ready,
    event_text,
    format_timeline,
    narration_line,
    prepare_data_dir,
    recovery_seconds,
    stayed_ready,
    toleration_outlasted,
)

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_narration_line_has_wall_clock_and_elapsed() -> None:
    line = narration_line(T0, 12.34, "member1 goes down")
    local = T0.astimezone().strftime("%H:%M:%S")
    assert line == f"[{local} + 12.3s] member1 goes down"


def test_recovery_seconds_is_recovered_minus_eviction() -> None:
    assert recovery_seconds(T0, T0 + timedelta(seconds=2.5)) == 2.5
    assert recovery_seconds(T0, None) is None
    assert recovery_seconds(None, T0) is None


def test_timeline_sorted_relative_to_the_fault_with_recovery() -> None:
    entries = [
        TimelineEntry(T0 + timedelta(seconds=12.9), "failover history", "evicted from member1"),
        TimelineEntry(T0 + timedelta(seconds=3.3), "cluster status", "member1 Ready=False"),
        TimelineEntry(T0 - timedelta(seconds=0.4), "event", "ClusterNotReachable: cluster is not reachable"),
    ]
    lines = format_timeline("Timeline:", T0, entries, 2.06, 15.1)
    assert lines[0] == "Timeline:"
    assert "SINCE FAULT" in lines[1] and "SOURCE" in lines[1]
    assert [line.split()[0] for line in lines[2:5]] == ["-0.4s", "+3.3s", "+12.9s"]
    assert lines[3].endswith("cluster status     member1 Ready=False")
    assert lines[5] == ("  Recovery time (eviction -> every new replica Healthy, from status.failoverHistory): 2.1s")
    assert lines[6] == "  From member1 going down to the template reading 3/3 again: 15.1s"


def test_timeline_without_recovery_says_so() -> None:
    lines = format_timeline("T", T0, [], None)
    assert lines[-1] == "  Recovery time: not recorded (the new placement never reported Healthy)"


def test_event_text_is_one_short_line() -> None:
    assert event_text("Evicted", "from\n  member1") == "Evicted: from member1"
    long = event_text("TaintClusterSucceed", "x" * 200, limit=40)
    assert len(long) == 40 and long.endswith("...")


def narrator() -> tuple[Narrator, io.StringIO]:
    out = io.StringIO()
    return Narrator(out), out


async def test_step_narrates_when_the_condition_holds_at_its_time() -> None:
    n, out = narrator()
    calls = 0
    at = T0 + timedelta(seconds=1)

    async def check() -> Seen | str | None:
        nonlocal calls
        calls += 1
        return Seen(at) if calls == 3 else f"try {calls}"

    seen = await n.step("x ready", check, timeout=5, say="x is ready", poll=0.001)
    assert seen.at == at and calls == 3
    assert out.getvalue().rstrip().endswith("] x is ready")
    assert n.steps[-1] == (at, "x is ready")


async def test_a_step_that_never_happens_times_out_naming_itself() -> None:
    n, out = narrator()

    async def never() -> Seen | str | None:
        return "placed member1:1,member2:2"

    with pytest.raises(StepTimedOut) as failed:
        await n.step("nginx rescheduled to member2:3", never, timeout=0.05, poll=0.01)
    assert failed.value.what == "nginx rescheduled to member2:3"
    assert str(failed.value) == ("step timed out after 0.05s: nginx rescheduled to member2:3 "
                                 "(last seen: placed member1:1,member2:2)")
    assert out.getvalue() == ""


async def test_errors_in_a_check_mean_not_yet() -> None:
    n, _ = narrator()

    async def unreachable() -> Seen | str | None:
        raise OSError("connection refused")

    with pytest.raises(StepTimedOut, match="last seen: OSError: connection refused"):
        await n.step("member1 answers", unreachable, timeout=0.02, poll=0.005)


async def test_stays_fails_the_moment_the_condition_breaks() -> None:
    n, out = narrator()
    calls = 0

    async def flaps() -> Seen | str | None:
        nonlocal calls
        calls += 1
        return n.now() if calls < 3 else "placed member1:1,member2:2"

    with pytest.raises(StepBroken, match="nginx stays on member2 no longer held"):
        await n.stays("nginx stays on member2", flaps, seconds=5, poll=0.001)
    assert calls == 3 and out.getvalue() == ""


async def test_stays_narrates_after_holding() -> None:
    n, out = narrator()

    async def holds() -> Seen | str | None:
        return n.now()

    await n.stays("held", holds, seconds=0.02, say="it held", poll=0.005)
    assert out.getvalue().rstrip().endswith("] it held")


def test_prepare_data_dir_clears_an_old_demo_but_not_other_dirs(tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "etcd").mkdir(parents=True)
    prepare_data_dir(old)
    assert not old.exists()
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_text("")
    with pytest.raises(UserError, match="not a Flotilla data dir"):
        prepare_data_dir(other)
    assert (other / "cat.jpg").exists()


# -- the narrated claims' checks ------------------------------------------------------------------

def cluster_with_ready(status: str) -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member3"
    if status:
        set_condition(cluster.status.conditions, "Ready", status, "r", "", T0)
    return cluster


def test_stayed_ready_needs_every_observed_version_ready() -> None:
    assert stayed_ready("member3", [cluster_with_ready("True")] * 3) is None
    assert stayed_ready("member3", [cluster_with_ready("True"), cluster_with_ready("Unknown"),
                                    cluster_with_ready("True")]) == "member3 was seen with Ready=Unknown"
    assert stayed_ready("member3", [cluster_with_ready("")]) == "member3 was seen with Ready=absent"
    assert stayed_ready("member3", []) == "no version of member3 was observed"


def test_the_toleration_counts_from_the_taints_time_added() -> None:
    added = T0.replace(microsecond=0)
    assert toleration_outlasted(added, added + timedelta(seconds=5), 5) is None
    assert toleration_outlasted(added, added + timedelta(seconds=4.2), 5) == (
        "evicted 4.200 s after the taint was added, within the 5 s toleration")


def rb_version(task: bool, member2_ready: int | None = None) -> work_pb2.ResourceBinding:
    rb = work_pb2.ResourceBinding()
    rb.spec.clusters.add(name="member2", replicas=3)
    if task:
        rb.spec.graceful_eviction_tasks.add(from_cluster="member1")
    if member2_ready is not None:
        rb.status.aggregated_status.add(cluster_name="member2", health="Healthy", applied=True,
                                        status=json.dumps({"readyReplicas": member2_ready}).encode())
    return rb


def test_the_task_must_be_dropped_only_after_the_new_replicas_were_ready() -> None:
    before = rb_version(False, 2)
    in_order = [before, rb_version(True, 2), rb_version(True, 3), rb_version(False, 3)]
    assert dropped_after_ready(in_order, "member1", "member2", 3) == (2, 3)
    # In one write: the version that dropped it already reports the replicas ready.
    assert dropped_after_ready([rb_version(True, 2), rb_version(False, 3)], "member1", "member2", 3) == (1, 1)
    # Dropped while member2 reported 2 ready (the old replicas' health, or the task's timeout).
    assert "dropped before the binding reported 3 ready replicas in member2" in str(
        dropped_after_ready([before, rb_version(True, 2), rb_version(False, 2), rb_version(False, 3)],
                            "member1", "member2", 3))
    assert dropped_after_ready([rb_version(True, 3)], "member1", "member2", 3) == (
        "member1's graceful eviction task is still there")
    assert dropped_after_ready([before], "member1", "member2", 3) == "no version with member1's graceful eviction task"


async def test_a_failed_check_is_not_taken_for_not_yet() -> None:
    n, out = narrator()

    async def contradicted() -> Seen | str | None:
        raise CheckFailed("member1 still had its copy of nginx", "nginx was gone from member1 when it answered")

    with pytest.raises(CheckFailed, match="check failed: member1 still had its copy of nginx: nginx was gone"):
        await n.step("member1 still runs its copy", contradicted, timeout=5, poll=0.001)
    assert out.getvalue() == ""
