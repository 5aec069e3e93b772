"""Interpreter workers start without running any fork handler (flotilla/interpreter/worker_process.py).

gRPC registers pthread_atfork handlers; under uvloop, which starts subprocesses with fork(), a
worker's child ran them and could die of SIGSEGV before its exec. Each test runs in a process of
its own, on uvloop as the services run, with a fork handler of its own that counts the forks."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# A pthread_atfork handler that counts the forks run in this process; then a pool on uvloop that
# starts its workers (and replaces a killed one) and runs a call on each.
PROBE = """
import asyncio, ctypes, os, sys
import uvloop
from flotilla.interpreter.pool import ScriptPool

forks = 0
@ctypes.CFUNCTYPE(None)
def prepare():
    global forks
    forks += 1
# pthread_atfork itself is linked statically into each program; glibc exports what it calls.
assert ctypes.CDLL("libc.so.6").__register_atfork(prepare, None, None, None) == 0

SCRIPT = "function F(x) return x + 1 end"

def descriptors():
    return len(os.listdir("/proc/self/fd"))

async def main():
    async with ScriptPool(2, timeout=5.0) as pool:
        assert (await pool.call(SCRIPT, "F", [1])).ok
        opened = descriptors()
        for _ in range(ROUNDS):
            killed = set(pool.pids)
            for pid in killed:
                os.kill(pid, 9)
            while killed & set(pool.pids) or len(pool.pids) < 2:
                await asyncio.sleep(0.01)
            await pool.wait_ready()
            assert (await pool.call(SCRIPT, "F", [1])).ok
        print(forks, pool.spawned, descriptors() - opened)

uvloop.run(main())
"""


def run_probe(rounds: int) -> tuple[int, int, int]:
    done = subprocess.run([sys.executable, "-c", PROBE.replace("ROUNDS", str(rounds))], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    forks, spawned, leaked = map(int, done.stdout.split())
    return forks, spawned, leaked


def test_workers_start_and_are_replaced_without_a_fork_handler_run() -> None:
    forks, spawned, _ = run_probe(rounds=3)
    assert spawned >= 6
    assert forks == 0


def test_replaced_workers_leave_no_descriptor_open() -> None:
    _, spawned, leaked = run_probe(rounds=20)
    assert spawned >= 40
    assert leaked <= 0
