"""CPU profiles of a running service, for finding what a rollout or a failover spends its CPU on.

With `FLOTILLA_CPROFILE_DIR` set, a service profiles itself between SIGUSR1 (start) and SIGUSR2
(stop, and write `<dir>/<service>-<pid>-<n>.prof` for the n-th window, readable with
`python -m pstats`); `flotilla bench failover` sends both around the rollout (window 1) and
around each failover it measures when the variable is set. Without it nothing is installed:
cProfile slows every call it sees, and no service pays for it unasked.
"""

from __future__ import annotations

import cProfile
import os
import signal
from pathlib import Path
from types import FrameType

ENV = "FLOTILLA_CPROFILE_DIR"


class _Windows:
    """One profiler per window, each written to a file of its own when it stops."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.count = 0
        self.profiler: cProfile.Profile | None = None

    def start(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        self.profiler = cProfile.Profile()
        self.profiler.enable()

    def stop(self, _signum: int, _frame: FrameType | None) -> None:
        profiler, self.profiler = self.profiler, None
        if profiler is None:
            return
        profiler.disable()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(self.out.with_name(f"{self.out.name}-{self.count}.prof"))


def install(service: str) -> None:
    """Profile between SIGUSR1 and SIGUSR2 when FLOTILLA_CPROFILE_DIR names a directory."""
    directory = os.environ.get(ENV)
    if not directory:
        return
    windows = _Windows(Path(directory) / f"{service}-{os.getpid()}")
    signal.signal(signal.SIGUSR1, windows.start)
    signal.signal(signal.SIGUSR2, windows.stop)
