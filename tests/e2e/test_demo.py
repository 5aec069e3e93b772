"""`flotilla demo` end to end: run as a user runs it (its own data dir, a tmp HOME from conftest),
it narrates every step, each claim checked against what it observed (the toleration, the task
dropped after the new replicas were ready, member1's copy before its deletion, member3 Ready
through the application failover), exits 0, stops its plane and leaves the user's current-context
pointer alone;
and no member credential shows up in its output or in any log line of its processes."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from flotilla.security import context as ctx
from tests.conftest import ROOT
from tests.e2e.planes import BIN

pytestmark = pytest.mark.e2e

# One phrase of each step's narrated line, in the order they must appear.
STEPS = [
    "Starting Flotilla",
    "Three member clusters joined and Ready",
    "Applying examples/nginx-divided.yaml",
    "placed nginx: 1 replica on member1, 2 on member2",
    "nginx 1/1 ready in member1",
    "nginx 2/2 ready in member2",
    "reads 3/3 ready",
    "member1 goes down",
    "Flotilla marks it not Ready after 3 s of failed probes",
    "taints member1 NoSchedule",
    "Then NoExecute",
    "The taint outlasted nginx's 5 s toleration (evicted",
    "Flotilla evicts nginx from member1",
    "member2 now gets all 3",
    "member2 runs 3/3 ready replicas of nginx",
    "reports the 3 new replicas ready in member2, and only then Flotilla drops the graceful eviction task",
    "reads 3/3 ready again",
    "status.failoverHistory",
    "member1 comes back",
    "member1 still has the copy of nginx it ran",
    "Flotilla marks member1 Ready again",
    "removes its taints",
    "deletes the copy of nginx that member1 still had",
    "member1's Work for it",
    "Nothing moves back",
    "still reads 3/3 ready",
    "The failover's timeline",
    "Application failover",
    "placed api: 1 replica on member2, 1 on member3",
    "api is 1/1 ready in member3",
    "api's pods on member3 stop being ready",
    "Flotilla moves its replica to member2",
    "member3 stayed Ready throughout",
    "Demo complete: every step happened and every check held",
]

STAMP = re.compile(r"^\[\d\d:\d\d:\d\d \+\s*\d+\.\ds\] ")


def test_demo_narrates_every_step_and_stops(tmp_path: Path) -> None:
    pointer = ctx.pointer_path()
    pointer.parent.mkdir(parents=True, exist_ok=True)
    other = tmp_path / "users-plane"
    pointer.write_text(f"{other}\n")
    data_dir = tmp_path / "demo"
    result = subprocess.run([str(BIN / "flotilla"), "demo", "--data-dir", str(data_dir)], cwd=ROOT,
                            capture_output=True, text=True, timeout=240, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    narrated = [line for line in lines if STAMP.match(line)]
    position = 0
    for phrase in STEPS:
        found = next((i for i, line in enumerate(narrated) if i >= position and phrase in line), None)
        assert found is not None, f"no narrated line with {phrase!r} after line {position}:\n{result.stdout}"
        position = found
    # The eviction came no sooner than the toleration, by the demo's own check of the figures.
    waited = re.search(r"evicted (\d+\.\d) s after the NoExecute taint's timeAdded", result.stdout)
    assert waited and float(waited.group(1)) >= 5.0, result.stdout
    assert "check failed" not in result.stdout + result.stderr
    assert re.search(r"Recovery time \(eviction -> every new replica Healthy, from status.failoverHistory\): "
                     r"\d+\.\ds", result.stdout), result.stdout
    # The plane is stopped, its context gone, and the user's pointer still names their plane.
    assert not (data_dir / "run.json").exists()
    assert not ctx.Context.path(data_dir).exists()
    assert pointer.read_text() == f"{other}\n"
    assert_no_credential_leaks(data_dir, result.stdout + result.stderr)


def assert_no_credential_leaks(data_dir: Path, output: str) -> None:
    """The members' tokens (from the simulator's kubeconfigs), raw or base64, appear in no log
    line of the plane's processes and nowhere in the command's output."""
    tokens = [user["user"]["token"] for path in sorted((data_dir / "sim" / "kubeconfigs").glob("*.yaml"))
              for user in yaml.safe_load(path.read_text())["users"]]
    assert tokens
    forms = [form for token in tokens for form in (token, base64.b64encode(token.encode()).decode())]
    for path in sorted((data_dir / "logs").glob("*.log")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            assert not any(form in line for form in forms), f"a member token in {path.name}:{number}"
    assert not any(form in output for form in forms), "a member token in the command's output"
