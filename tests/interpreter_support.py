"""Hostile interpreter scripts and what their tests watch: the event loop's lag, and processes
that must be gone (shared by tests/unit/test_interpreter_pool.py, tests/integration/
test_hostile_scripts.py and tests/e2e/test_hostile_scripts.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

HEALTH_FUNCTION = "InterpretHealth"

# Each runs at most its call's time limit before the hook or a kill stops it, or fails at once.
HOSTILE = {
    "endless-loop": "while true do end",
    # One call into C that backtracks for ever: only killing the worker stops it.
    "backtracking-find": 'return string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")',
    # The same string each time (Lua interns it): memory grows slowly, in C calls the hook never sees.
    "memory-bomb": 'local t = {} while true do t[#t+1] = string.rep("x", 1e6) end',
    "memory-bomb-unique": 'local t = {} while true do t[#t+1] = string.rep("x", 1e6) .. #t end',
    "deep-recursion": "local function f(n) return 1 + f(n + 1) end\n  return f(1)",
    "deep-c-recursion": "local function f(s) return (string.gsub(s, '.', f)) end\n  return f('ab')",
}
# Generous for a loaded machine (a pool test on a slow, loaded one saw 0.59 s): a loop that ran a
# hostile script itself would be blocked for good, or for whole seconds.
MAX_LOOP_LAG = 1.0


def health_script(body: str) -> str:
    return f"function {HEALTH_FUNCTION}(observedObj)\n  {body}\nend\n"


class LoopLag:
    """The worst delay of a 10 ms sleep on the loop while it runs: how long the loop was blocked."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, loop.time() - before - 0.01)

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for a parent that never reaps it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


async def until_gone(pids: Iterable[int], timeout: float = 15.0) -> None:
    pids = list(pids)
    async with asyncio.timeout(timeout):
        while any(alive(pid) for pid in pids):
            await asyncio.sleep(0.05)
