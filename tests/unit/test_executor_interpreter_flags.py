"""The executor's interpreter flags reach its script pool, and the pool lives as long as the
executor's manager: started with it, no worker before a script is to run, none left after."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import cluster_pb2
from flotilla.member import MemberClient
from flotilla.runtime.flags import apply_env_defaults
from flotilla.store import MemoryStore
from services.executor.__main__ import add_arguments
from services.executor.controllers import ExecutionManager
from tests.interpreter_support import HEALTH_FUNCTION, health_script, until_gone


def parser() -> argparse.ArgumentParser:
    parsed = argparse.ArgumentParser()
    add_arguments(parsed)
    return parsed


def test_defaults_flags_and_environment() -> None:
    defaults = parser().parse_args([])
    assert (defaults.interpreter_call_timeout, defaults.interpreter_workers) == (0.1, 2)
    given = parser().parse_args(["--interpreter-call-timeout", "250ms", "--interpreter-workers", "4"])
    assert (given.interpreter_call_timeout, given.interpreter_workers) == (0.25, 4)
    from_env = parser()
    apply_env_defaults(from_env, {"FLOTILLA_INTERPRETER_CALL_TIMEOUT": "1s", "FLOTILLA_INTERPRETER_WORKERS": "3"})
    args = from_env.parse_args([])
    assert (args.interpreter_call_timeout, args.interpreter_workers) == (1.0, 3)


@pytest.mark.parametrize("argv", [["--interpreter-workers", "0"], ["--interpreter-call-timeout", "0s"]])
def test_a_pool_without_workers_or_time_is_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(argv)


async def test_the_pool_lives_and_dies_with_the_manager(memory_store: MemoryStore) -> None:
    async def connect(_: cluster_pb2.Cluster) -> MemberClient:
        raise AssertionError("no member is served")

    execution = ExecutionManager(memory_store, FakeClock(), connect, lambda _: False, interpreter_timeout=0.5,
                                 interpreter_workers=3)
    assert (execution.scripts.size, execution.scripts.timeout) == (3, 0.5)
    running = asyncio.create_task(execution.run())
    try:
        await asyncio.sleep(0.2)
        assert execution.scripts.pids == []
        assert (await execution.scripts.call(health_script("return true"), HEALTH_FUNCTION, [{}])).ok
        await execution.scripts.wait_ready()
        pids = execution.scripts.pids
        assert len(pids) == 3
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    await until_gone(pids, timeout=10)
