"""CPU profiles of a running service, for finding what a failover spends its CPU on.

With `FLOTILLA_CPROFILE_DIR` set, a service profiles itself between SIGUSR1 (start) and SIGUSR2
(stop, and write `<dir>/<service>-<pid>.prof`, readable with `python -m pstats`); `flotilla bench
failover` sends both around the failover it measures when the variable is set. Without it nothing
is installed: cProfile slows every call it sees, and no service pays for it unasked.
"""

from __future__ import annotations

import cProfile
import os
import signal
from pathlib import Path
from types import FrameType

ENV = "FLOTILLA_CPROFILE_DIR"


def install(service: str) -> None:
    """Profile between SIGUSR1 and SIGUSR2 when FLOTILLA_CPROFILE_DIR names a directory."""
    directory = os.environ.get(ENV)
    if not directory:
        return
    out = Path(directory) / f"{service}-{os.getpid()}.prof"
    profiler = cProfile.Profile()

    def start(_signum: int, _frame: FrameType | None) -> None:
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        out.parent.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
