"""`python -m flotilla.interpreter.worker`: one process of the script pool (flotilla.interpreter.pool).

It runs one call at a time in a sealed LuaSandbox and answers over its
stdout (flotilla.interpreter.protocol). Everything that could make a script
take the process down is bounded here as well as by the pool, so a worker
never outlives what it was started for:
- time: the sandbox's hook stops Lua code at the call's limit; a single
  call into the Lua library (a backtracking `string.find`) is stopped by the
  pool killing the process, and, should the pool be stuck, by RLIMIT_CPU,
  whose soft limit is moved before each call to what that call may use
  (the kernel kills the process with SIGXCPU past it);
- memory: lupa's allocator limit fails the script cleanly; RLIMIT_AS bounds
  the process as a whole (Python's part included), and no core is dumped;
- its parent: the worker exits at end of file on stdin, and Linux kills it
  the moment the process that started it dies (PR_SET_PDEATHSIG), even in
  the middle of a call that never reads stdin again.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import resource
import signal
import sys
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from flotilla.interpreter import protocol
from flotilla.interpreter.errors import InterpretationError, ScriptMemoryExceeded, ScriptTimeout
from flotilla.interpreter.lua import compile_failure
from flotilla.interpreter.sandbox import LuaSandbox

STDIN, STDOUT = 0, 1
# Compiled scripts kept per worker: one per customization and operation is the usual working set.
COMPILED_SCRIPTS = 64
_PR_SET_PDEATHSIG = 1


class _Scripts:
    """Compiled chunks (or compile errors) by script text, least recently used dropped first."""

    def __init__(self, sandbox: LuaSandbox, capacity: int = COMPILED_SCRIPTS) -> None:
        self._sandbox = sandbox
        self._capacity = capacity
        self._compiled: OrderedDict[str, Any] = OrderedDict()

    def chunk(self, script: str) -> Any:
        found = self._compiled.get(script)
        if found is None:
            try:
                found = self._sandbox.compile(script)
            except InterpretationError as error:
                found = InterpretationError(compile_failure(str(error)))
            self._compiled[script] = found
            if len(self._compiled) > self._capacity:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(script)
        if isinstance(found, InterpretationError):
            raise found
        return found


def serve(sandbox: LuaSandbox, scripts: _Scripts, request: Any) -> dict[str, Any]:
    """The answer to one call."""
    call_id = request.get(protocol.ID) if isinstance(request, dict) else None
    try:
        script, function, arguments = request["script"], request["function"], request["arguments"]
        timeout = float(request["timeout"])
        if not (isinstance(script, str) and isinstance(function, str) and isinstance(arguments, list)):
            raise TypeError("malformed call")
    except (KeyError, TypeError, ValueError) as error:
        raise protocol.ProtocolError(f"not a call: {error}") from error
    _limit_cpu(float(request.get("cpu", timeout)))
    try:
        values = sandbox.call(scripts.chunk(script), function, arguments, timeout)
    except ScriptTimeout as error:
        return _failure(call_id, protocol.TIMED_OUT, error)
    except ScriptMemoryExceeded as error:
        return _failure(call_id, protocol.OUT_OF_MEMORY, error)
    except MemoryError:
        return _failure(call_id, protocol.OUT_OF_MEMORY, "interpreter worker ran out of memory")
    except InterpretationError as error:
        return _failure(call_id, protocol.FAILED, error)
    return {protocol.ID: call_id, protocol.VALUES: [list(value) for value in values]}


def _failure(call_id: Any, failure: str, error: object) -> dict[str, Any]:
    return {protocol.ID: call_id, protocol.FAILURE: failure, protocol.ERROR: str(error) or failure}


def _answer(response: dict[str, Any]) -> bytes:
    try:
        return protocol.encode(response)
    except protocol.FrameTooLarge as error:
        return protocol.encode(_failure(response.get(protocol.ID), protocol.FAILED, f"result too large: {error}"))
    except ValueError as error:  # a value JSON cannot hold
        return protocol.encode(_failure(response.get(protocol.ID), protocol.FAILED, f"result is not JSON: {error}"))


def _limit_cpu(seconds: float) -> None:
    """Let this call use `seconds` more CPU time (rounded up: the limit counts whole seconds), no more."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _limit_process(address_space: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if address_space > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard > address_space:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def _die_with_parent(parent: int) -> None:
    """Be killed when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # end of file on stdin still ends the worker once its call returns
    if parent and os.getppid() != parent:
        raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flotilla.interpreter.worker")
    parser.add_argument("--memory-limit", type=int, required=True, help="bytes the Lua runtime may allocate")
    parser.add_argument("--address-space-limit", type=int, default=0, help="RLIMIT_AS in bytes; 0: unlimited")
    parser.add_argument("--parent", type=int, default=0, help="the pool's process id")
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)
    # Interrupting the service's terminal interrupts the service, which stops its workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _limit_process(args.address_space_limit)
    # stdout carries frames only: nothing may print to it.
    sys.stdout = sys.stderr
    sandbox = LuaSandbox(args.memory_limit)
    scripts = _Scripts(sandbox)
    protocol.write_frame(STDOUT, protocol.encode({protocol.READY: os.getpid()}))
    while True:
        request = protocol.read_frame(STDIN)
        if request is None:
            return 0
        protocol.write_frame(STDOUT, _answer(serve(sandbox, scripts, request)))


if __name__ == "__main__":
    sys.exit(main())
