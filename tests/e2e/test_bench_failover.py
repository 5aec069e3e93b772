"""`flotilla bench failover`, as small as it goes, so the benchmark cannot rot unnoticed: it
starts its plane, fails one member, prints one JSON object with every figure the issue asks
for, and leaves nothing running. Its times are measured by running it, never by a test; what a
test holds it to is what does not depend on the machine: the binding seen through every stage,
no task dropped before its new placement was Healthy, and at most 4 writes of the failover's
own to the binding. `python -m flotilla.plane.benchmarks.failover --smoke` is the same run
(tests/e2e/test_bench_smoke.py leaves it to this file), here with the member unreachable rather than down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import ROOT
from tests.e2e.planes import BIN

pytestmark = pytest.mark.e2e

STAGES = {"evicted", "rescheduled", "healthy", "task_dropped"}


def assert_complete(failover: dict[str, Any], fault: str) -> None:
    """The one affected binding seen through every stage, its figures all there, with the
    failover's own writes to it within the issue's budget of 4."""
    assert failover["complete"] is True and failover["affected"] == 1
    assert failover["stages_complete"] is True and failover["dropped_before_healthy"] == 0
    assert set(failover["stages_from_taint_s"]) == STAGES
    assert all(s["reached"] == 1 and s["p99"] is not None for s in failover["stages_from_taint_s"].values())
    assert failover["total_s"] == failover["stages_from_taint_s"]["task_dropped"]["max"]
    # The fault is named next to the detection it caused.
    keys = list(failover)
    assert failover["fault"] == fault and keys.index("detection_s") == keys.index("fault") + 1
    assert failover["detection_s"] > 0
    assert failover["etcd"]["writes_counted"] is True
    assert 1 <= failover["etcd"]["writes_per_evicted_binding"]["binding_failover"] <= 4


@pytest.mark.timeout(180)
def test_a_tiny_failover_prints_every_figure(tmp_path: Path) -> None:
    before = {p.pid for p in psutil.process_iter()}
    # TMPDIR: the plane's directory (etcd's data, logs) goes under the test's own.
    result = subprocess.run(
        [str(BIN / "flotilla"), "bench", "failover", "--clusters", "3", "--bindings", "6",
         "--failure-threshold", "1s", "--timeout", "120"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["rollout"]["all_healthy"] is True
    # Each Deployment went through the executor's detector (once: not again for its own binding).
    assert out["rollout"]["reconciles_per_binding"]["executor/detector"] >= 1
    assert out["false_failovers"] == []
    [failover] = out["failovers"]
    assert out["fault"] == "down"
    assert_complete(failover, "down")
    assert failover["events_settled_s"] is not None and failover["events_settled_s"] >= 0
    writes = failover["etcd"]["writes_per_evicted_binding"]
    assert {"binding_failover", "binding_work_status", "events", "all_keys"} <= set(writes)
    assert failover["etcd"]["mvcc_put_total"] > 0
    assert {"etcd", "sim", "status", "scheduler", "executor", "eviction", "taint_manager"} <= set(failover["processes"])
    assert all(p["cpu_s"] >= 0 and p["peak_rss_mib"] > 0 for p in failover["processes"].values())
    assert set(failover["harness_processes"]) == {"bench", "readyz_probe"}
    assert failover["harness_processes"]["bench"]["cpu_s"] > 0
    # The settled plane's cost before the fault, which the failover's window pays too.
    assert set(failover["idle_cores"]) == set(failover["processes"])
    assert all(cores is not None and cores >= 0 for cores in failover["idle_cores"].values())
    per_binding = failover["cpu_ms_per_evicted_binding"]
    assert set(per_binding) == set(failover["processes"]) and per_binding["executor"] > 0
    # The one evicted binding passed through the controllers of every service on its way.
    passes = failover["reconciles_per_evicted_binding"]
    assert {"taint_manager", "scheduler", "executor", "eviction"} <= {key.split("/")[0] for key in passes}
    assert passes["executor/binding"] >= 1 and passes["eviction/graceful-eviction"] >= 1
    # One replica of each service that divides its work holds all of it.
    assert failover["executor_shards"] == {"executor": ["member1", "member2", "member3"]}
    assert all(failover[f"{s}_buckets"] == {s: 32} for s in ("executor", "scheduler", "eviction", "taint_manager"))
    readyz = out["readyz_ms"]
    assert readyz["probes"] > 0 and readyz["left_out"] == ["member1"]
    assert set(readyz["members"]) == {"member1", "member2", "member3"}
    assert readyz["members"]["member1"]["failures"] > 0
    assert len(out["load_average_start"]) == 3
    left = [p for p in psutil.process_iter(["pid", "cmdline"]) if p.pid not in before
            and "flotilla-bench-failover" in " ".join(p.info["cmdline"] or [])]
    assert not left, f"still running: {left}"


@pytest.mark.timeout(180)
def test_an_unreachable_member_is_failed_over_through_the_probe_timeout(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flotilla.plane.benchmarks.failover", "--smoke", "--fault", "unreachable"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["false_failovers"] == []
    [failover] = out["failovers"]
    assert_complete(failover, "unreachable")
    # member1 held its probes until the prober gave up: each is a latency of the probe timeout.
    readyz = out["readyz_ms"]
    held = readyz["members"]["member1"]
    assert held["timeouts"] > 0 and held["max"] == readyz["timeout_ms"]
    assert readyz["left_out"] == ["member1"]


def test_bad_sizes_are_one_line_errors() -> None:
    result = subprocess.run([str(BIN / "flotilla"), "bench", "failover", "--clusters", "1", "--bindings", "6"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "flotilla bench: --clusters: 1 is too few for 1 failed cluster(s) and a survivor"]
