"""`running(pid)` (flotilla/plane/local_plane.py): a process that has exited is stopped even before
its parent reaps it. A plane started with --detach leaves its processes to init, which may reap
them seconds later; `flotilla down` waiting for that took seconds per plane."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flotilla.plane.local_plane import running


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are read from /proc")
def test_an_exited_process_not_yet_reaped_is_not_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert running(child.pid)
        assert child.stdin is not None
        child.stdin.close()  # it exits; nobody reaps it until wait() below
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)  # another process's exit gives no event to await without reaping it
        assert not running(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not running(child.pid)
