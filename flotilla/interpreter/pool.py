"""Interpreter scripts run in a bounded pool of worker processes, never on a service's event loop.

Why processes: a Lua call can be one call into C that nothing inside the
process interrupts (`string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")`
backtracks for longer than the universe has existed). On the executor's
event loop it would stop every propagation, failover and lease renewal; in a
thread it would still hold a core and the GIL-free C code cannot be stopped.
A process can be killed.

How: each worker is `python -m flotilla.interpreter.worker`, started with
vfork and exec (flotilla.interpreter.worker_process: no state of the service
is copied into it, no fork handler runs, the loop waits only until the exec),
speaking length-prefixed JSON frames over its stdin and stdout
(flotilla.interpreter.protocol). A call is "run function F of script S on
arguments A, within T seconds"; the answer is F's return values as JSON
tagged with their Lua types, or why there is none.
Nothing here knows about health, so every interpreter operation can use it.

Limits, each with its reason:
- time: the worker's sandbox stops Lua code at T (the script gets an error
  and the worker stays); if no answer arrives by T + `kill_grace` (one C call
  that never returns to the VM), the worker is killed and replaced, and the
  call reads `timeout`. RLIMIT_CPU in the worker is the backstop should this
  loop itself be stuck;
- memory: lupa's allocator limit in the worker (the call reads `killed`, and
  the worker is replaced to hand the memory back), RLIMIT_AS as the backstop;
- a worker that dies (a limit, a crash) fails its call as `killed` and is
  replaced;
- fairness: at most `workers` processes; each script's calls queue
  separately (at most `queue_limit` waiting, further callers wait for room),
  free workers serve the scripts in turn, and one script holds at most
  `workers - 1` of them, so while one script keeps timing out the others
  still get a worker within one call's time;
- a script whose calls overran (`timeout` or `killed`) `overruns_to_suspend`
  times in a row is suspended: its calls read `suspended` at once, without a
  worker, for `suspension[0]` seconds; one more overrun after that suspends
  it again for twice as long, up to `suspension[1]`; a call that completes
  (even with an error) clears its record. A runaway script then costs a few
  kills per suspension, not one per object per pass.

Results are `CallResult`s: `ok` with values, or `error`, `timeout`, `killed`,
`suspended`, `unavailable` (no worker could be started) with a message; only
a closed pool raises (PoolClosed), so a service stopping does not record
its own shutdown as the scripts' failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from flotilla.aio.clock import Clock, RealClock
from flotilla.interpreter import protocol, worker_process
from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.lua import DEFAULT_TIMEOUT
from flotilla.interpreter.sandbox import DEFAULT_MEMORY_LIMIT, LuaValue, check_json, timeout_message
from flotilla.interpreter.worker_process import WorkerProcess

__all__ = [
    "DEFAULT_WORKERS",
    "ERROR",
    "KILLED",
    "OK",
    "SUSPENDED",
    "TIMEOUT",
    "UNAVAILABLE",
    "CallResult",
    "PoolClosed",
    "ScriptPool",
    "ScriptRunner",
]

log = logging.getLogger(__name__)

OK, ERROR, TIMEOUT, KILLED, SUSPENDED, UNAVAILABLE = "ok", "error", "timeout", "killed", "suspended", "unavailable"
OUTCOMES = (OK, ERROR, TIMEOUT, KILLED, SUSPENDED, UNAVAILABLE)
_OVERRUNS = (TIMEOUT, KILLED)

# Two: one for whichever script misbehaves, one for all the others. Scripts answer in
# microseconds; more workers only help with many scripts and many cores.
DEFAULT_WORKERS = 2
# How long past its time limit a call may go unanswered before its worker is killed: the
# hook answers within a millisecond of the limit, so this is only for a loaded machine.
KILL_GRACE = 0.25
QUEUE_LIMIT = 256
# The worker's whole address space: the interpreter and lupa take about 30 MiB, the Lua heap
# DEFAULT_MEMORY_LIMIT, and a decoded object of MAX_FRAME a few times its size.
ADDRESS_SPACE_LIMIT = 512 * 2**20
OVERRUNS_TO_SUSPEND = 3
SUSPENSION = (30.0, 300.0)
# A worker that has not said it is ready by then is taken for broken.
START_TIMEOUT = 30.0
# A start that fails once (a worker that died as it started, on a loaded host) is retried with
# the calls still waiting; they fail as unavailable once starts have failed this often in a row.
START_FAILURES_TO_FAIL_CALLS = 3
_START_BACKOFF = (0.1, 10.0)


@dataclass(frozen=True, slots=True)
class CallResult:
    outcome: str
    values: tuple[LuaValue, ...] = ()
    # Why there are no values; empty when the outcome is ok.
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == OK


class ScriptRunner(Protocol):
    """What interpreters need of a pool: run `function` of `script` on `arguments`."""

    async def call(self, script: str, function: str, arguments: Sequence[Any],
                   timeout: float | None = None) -> CallResult: ...


class PoolClosed(RuntimeError):
    """The pool was closed: the service is stopping, and the call has no answer."""


OnCall = Callable[[str, float], None]


class _Script:
    """One script's queue and record."""

    __slots__ = ("callers", "last_overrun", "overruns", "queue", "room", "running", "suspended_until",
                 "suspensions")

    def __init__(self, queue_limit: int) -> None:
        self.queue: deque[_Call] = deque()
        self.room = asyncio.Semaphore(queue_limit)
        self.callers = 0
        self.running = 0
        self.overruns = 0  # in a row
        self.suspensions = 0  # in a row, for the doubling
        self.suspended_until = 0.0
        self.last_overrun = ""


class _Call:
    __slots__ = ("future", "id", "queued", "request", "script", "timeout")

    def __init__(self, call_id: int, script: _Script, request: bytes, timeout: float,
                 future: asyncio.Future[CallResult]) -> None:
        self.id = call_id
        self.script = script
        self.request = request
        self.timeout = timeout
        self.future = future
        self.queued = True


class _Worker:
    __slots__ = ("call", "process", "reader", "retired", "timer")

    def __init__(self, process: WorkerProcess) -> None:
        self.process = process
        self.call: _Call | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.reader: asyncio.Task[None] | None = None
        # Killed, exited or asked to exit: never given another call.
        self.retired = False

    @property
    def pid(self) -> int:
        return self.process.pid


class ScriptPool:
    """Worker processes that run interpreter scripts; see the module docstring.

    Workers start on the first call (or `start()`), and are kept at `workers`
    from then on: an executor with no script to run starts none. `close()`
    (or leaving `async with`, or cancelling `run()`) kills them all and fails
    what is still waiting with PoolClosed; a closed pool starts again on
    `start()` or `run()`.
    """

    def __init__(self, workers: int = DEFAULT_WORKERS, *, timeout: float = DEFAULT_TIMEOUT,
                 kill_grace: float = KILL_GRACE, queue_limit: int = QUEUE_LIMIT,
                 memory_limit: int = DEFAULT_MEMORY_LIMIT, address_space_limit: int = ADDRESS_SPACE_LIMIT,
                 overruns_to_suspend: int = OVERRUNS_TO_SUSPEND, suspension: tuple[float, float] = SUSPENSION,
                 clock: Clock | None = None, on_call: OnCall | None = None) -> None:
        if workers < 1:
            raise ValueError(f"a pool needs at least one worker, got {workers}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if queue_limit < 1 or overruns_to_suspend < 1:
            raise ValueError("queue_limit and overruns_to_suspend must be at least 1")
        self.size = workers
        self.timeout = timeout
        self._kill_grace = kill_grace
        self._queue_limit = queue_limit
        self._memory_limit = memory_limit
        self._address_space_limit = address_space_limit
        self._overruns_to_suspend = overruns_to_suspend
        self._suspension = suspension
        self._clock = clock or RealClock()
        self._on_call = on_call
        # One script may hold all workers but one, so the others always have one.
        self._per_script = max(1, workers - 1)
        self._scripts: dict[str, _Script] = {}
        self._rotation: deque[_Script] = deque()  # scripts with queued calls, served in turn
        self._workers: set[_Worker] = set()
        self._idle: list[_Worker] = []
        self._starting: set[asyncio.Task[None]] = set()
        # Every worker until its process has been waited for, retired ones included.
        self._unreaped: set[_Worker] = set()
        self._start_failures = 0
        self._ready = asyncio.Event()
        self._ids = itertools.count(1)
        self._closed = False
        # Workers started over the pool's life: each replacement adds one.
        self.spawned = 0

    # -- calling -------------------------------------------------------------------------------

    async def call(self, script: str, function: str, arguments: Sequence[Any],
                   timeout: float | None = None) -> CallResult:
        """`function(*arguments)` of `script`, within `timeout` seconds (the pool's by default)."""
        if self._closed:
            raise PoolClosed("the interpreter pool is closed")
        timeout = self.timeout if timeout is None else timeout
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        started = time.perf_counter()
        state = self._scripts.get(script)
        if state is None:
            state = self._scripts[script] = _Script(self._queue_limit)
        state.callers += 1
        try:
            result = await self._call(state, script, function, arguments, timeout)
        finally:
            state.callers -= 1
            self._forget_if_quiet(script, state)
        if self._on_call is not None:
            self._on_call(result.outcome, time.perf_counter() - started)
        return result

    async def _call(self, state: _Script, script: str, function: str, arguments: Sequence[Any],
                    timeout: float) -> CallResult:
        suspended = self._suspended(state)
        if suspended is not None:
            return suspended
        call_id = next(self._ids)
        try:
            for argument in arguments:
                check_json(argument)
            request = protocol.encode({protocol.ID: call_id, "script": script, "function": function,
                                       "arguments": list(arguments), "timeout": timeout,
                                       "cpu": timeout + self._kill_grace})
        except InterpretationError as error:
            return CallResult(ERROR, error=str(error))
        except ValueError as error:  # too large, circular, or a float JSON cannot hold
            return CallResult(ERROR, error=f"arguments cannot be sent to the interpreter: {error}")
        await state.room.acquire()
        if self._closed:
            state.room.release()
            raise PoolClosed("the interpreter pool is closed")
        # Suspended while this caller waited for room: no worker for it either.
        suspended = self._suspended(state)
        if suspended is not None:
            state.room.release()
            return suspended
        call = _Call(call_id, state, request, timeout, asyncio.get_running_loop().create_future())
        state.queue.append(call)
        if len(state.queue) == 1:
            self._rotation.append(state)
        self._fill()
        self._dispatch()
        try:
            return await call.future
        except asyncio.CancelledError:
            if call.queued:
                self._unqueue(call)
            raise

    def _suspended(self, state: _Script) -> CallResult | None:
        remaining = state.suspended_until - self._clock.monotonic()
        if remaining <= 0:
            return None
        return CallResult(SUSPENDED, error=f"Lua script not run for {remaining:.0f}s more: its calls kept "
                                           f"overrunning their limits (last: {state.last_overrun})")

    def _judge(self, state: _Script, result: CallResult) -> None:
        """Keep the script's record of overruns; at the threshold, suspend it. Judged as each call ends,
        before its worker (or replacement) is given the script's next call."""
        if result.outcome in (OK, ERROR):
            state.overruns = state.suspensions = 0
            return
        if result.outcome not in _OVERRUNS:
            return
        state.overruns += 1
        state.last_overrun = result.error
        # Once suspended, one more overrun suspends it again: it has shown what it does.
        if state.overruns < self._overruns_to_suspend and not state.suspensions:
            return
        first, ceiling = self._suspension
        seconds = min(first * 2 ** min(state.suspensions, 32), ceiling)
        state.suspensions += 1
        state.overruns = 0
        state.suspended_until = self._clock.monotonic() + seconds
        log.warning("event=interpreter-script-suspended seconds=%g suspensions=%d last=%r", seconds,
                    state.suspensions, result.error)
        # What is queued would overrun the same way, one worker kill each.
        suspended = self._suspended(state)
        assert suspended is not None
        while state.queue:
            call = state.queue[0]
            self._unqueue(call)
            if not call.future.done():
                call.future.set_result(suspended)

    def _unqueue(self, call: _Call) -> None:
        state = call.script
        state.queue.remove(call)
        call.queued = False
        state.room.release()
        if not state.queue:
            self._rotation.remove(state)

    def _forget_if_quiet(self, script: str, state: _Script) -> None:
        # Scripts change with their customizations; a record of nothing is dropped.
        if (state.callers == 0 and state.running == 0 and not state.queue and state.overruns == 0
                and state.suspensions == 0 and self._scripts.get(script) is state):
            del self._scripts[script]

    # -- dispatching ---------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while self._idle and self._rotation:
            for _ in range(len(self._rotation)):
                state = self._rotation[0]
                self._rotation.rotate(-1)
                if state.running < self._per_script:
                    break
            else:
                return  # every script with calls waiting holds its share of workers
            call = state.queue[0]
            self._unqueue(call)
            if call.future.done():
                continue  # its caller gave up
            self._send(self._idle.pop(), call)

    def _send(self, worker: _Worker, call: _Call) -> None:
        worker.call = call
        call.script.running += 1
        stdin = worker.process.stdin
        assert stdin is not None
        # A worker that died since its last answer fails this call when its end of file is read.
        stdin.write(call.request)
        worker.timer = asyncio.get_running_loop().call_later(call.timeout + self._kill_grace, self._overrun, worker)

    def _finish_call(self, worker: _Worker, result: CallResult) -> None:
        call = worker.call
        assert call is not None
        worker.call = None
        if worker.timer is not None:
            worker.timer.cancel()
            worker.timer = None
        call.script.running -= 1
        if not call.future.done():
            call.future.set_result(result)
        self._judge(call.script, result)

    def _overrun(self, worker: _Worker) -> None:
        call = worker.call
        if call is None or worker.retired:
            return
        log.warning("event=interpreter-worker-killed pid=%d reason=timeout limit=%gs", worker.pid, call.timeout)
        self._finish_call(worker, CallResult(
            TIMEOUT, error=f"{timeout_message(call.timeout)}; its worker was stopped"))
        self._retire(worker, kill=True)

    def _answered(self, worker: _Worker, message: Any) -> None:
        call = worker.call
        if worker.retired or call is None:
            return  # the answer of a call already failed by its deadline
        if not isinstance(message, dict) or message.get(protocol.ID) != call.id:
            raise protocol.ProtocolError(f"answer to a call it was not given: {message!r:.200}")
        failure = message.get(protocol.FAILURE)
        if failure is None:
            values = message.get(protocol.VALUES)
            if not isinstance(values, list) or not all(
                    isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) for v in values):
                raise protocol.ProtocolError(f"malformed values: {values!r:.200}")
            self._finish_call(worker, CallResult(OK, tuple(LuaValue(t, v) for t, v in values)))
        else:
            error = str(message.get(protocol.ERROR, failure))
            outcome = {protocol.TIMED_OUT: TIMEOUT, protocol.OUT_OF_MEMORY: KILLED}.get(failure, ERROR)
            self._finish_call(worker, CallResult(outcome, error=error))
            if failure == protocol.OUT_OF_MEMORY:
                # The Lua heap was collected, but the process keeps what it grew to: replaced,
                # as if the memory limit had killed it.
                self._retire(worker, kill=False)
                return
        self._idle.append(worker)
        self._dispatch()

    # -- workers -------------------------------------------------------------------------------

    def _fill(self) -> None:
        """Start workers up to the pool's size."""
        # A start that failed is done but still listed until its done-callback runs.
        while not self._closed and len(self._workers) + sum(not t.done() for t in self._starting) < self.size:
            task = asyncio.create_task(self._start_worker(), name="interpreter-worker-start")
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_worker(self) -> None:
        if self._start_failures:
            first, ceiling = _START_BACKOFF
            await asyncio.sleep(min(first * 2 ** min(self._start_failures - 1, 32), ceiling))
        process: WorkerProcess | None = None
        creating = asyncio.ensure_future(worker_process.start([
            sys.executable, "-m", "flotilla.interpreter.worker",
            f"--memory-limit={self._memory_limit}", f"--address-space-limit={self._address_space_limit}",
            f"--parent={os.getpid()}"]))
        try:
            # Shielded: a start cancelled halfway would leave a process that nobody waits for.
            process = await asyncio.shield(creating)
            assert process.stdout is not None
            hello = await asyncio.wait_for(_read_message(process.stdout), START_TIMEOUT)
            if hello is None:
                code = await asyncio.wait_for(process.wait(), START_TIMEOUT)
                raise protocol.ProtocolError(f"worker {_exit_description(code)} before it said it was ready")
            if not isinstance(hello, dict) or protocol.READY not in hello:
                raise protocol.ProtocolError(f"worker did not say it is ready: {hello!r:.200}")
        except asyncio.CancelledError:
            if process is None:
                with contextlib.suppress(Exception):
                    process = await creating
            if process is not None:
                await _kill(process)
            raise
        except Exception as error:  # any failure to start is retried, and reported
            if process is not None:
                await _kill(process)
            self._start_failures += 1
            log.error("event=interpreter-worker-start-failed failures=%d error=%s: %s", self._start_failures,
                      type(error).__name__, error)
            if not self._workers and self._start_failures >= START_FAILURES_TO_FAIL_CALLS:
                self._fail_queued(CallResult(UNAVAILABLE, error=f"no interpreter worker could be started: "
                                                                 f"{type(error).__name__}: {error}"))
            asyncio.get_running_loop().call_soon(self._fill)
            return
        if self._closed:
            await _kill(process)
            return
        self._start_failures = 0
        worker = _Worker(process)
        self._workers.add(worker)
        self.spawned += 1
        worker.reader = asyncio.create_task(self._read(worker), name=f"interpreter-worker-{worker.pid}")
        self._unreaped.add(worker)
        self._idle.append(worker)
        if len(self._workers) >= self.size:
            self._ready.set()
        self._dispatch()

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        try:
            while True:
                message = await _read_message(stdout)
                if message is None:
                    break
                self._answered(worker, message)
        except (protocol.ProtocolError, asyncio.IncompleteReadError, ConnectionError) as error:
            log.error("event=interpreter-worker-protocol-error pid=%d error=%s", worker.pid, error)
        finally:
            await self._exited(worker)

    async def _exited(self, worker: _Worker) -> None:
        with contextlib.suppress(ProcessLookupError):
            worker.process.kill()
        code = await worker.process.wait()
        self._unreaped.discard(worker)
        if worker.call is not None:
            how = _exit_description(code)
            log.warning("event=interpreter-worker-died pid=%d how=%r", worker.pid, how)
            self._finish_call(worker, CallResult(KILLED, error=f"interpreter worker {how} during the call"))
        self._retire(worker, kill=False)

    def _retire(self, worker: _Worker, *, kill: bool) -> None:
        """Take a worker out of service, start its replacement, and make sure it ends."""
        if worker.retired:
            return
        worker.retired = True
        self._workers.discard(worker)
        if worker in self._idle:
            self._idle.remove(worker)
        self._ready.clear()
        if kill:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        else:
            stdin = worker.process.stdin
            if stdin is not None and not stdin.is_closing():
                stdin.close()  # end of file: the worker exits; its reader sees it go
        self._fill()
        self._dispatch()

    def _fail_queued(self, result: CallResult) -> None:
        for state in list(self._rotation):
            while state.queue:
                call = state.queue[0]
                self._unqueue(call)
                if not call.future.done():
                    call.future.set_result(result)

    # -- lifetime ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers now rather than at the first call (and open a closed pool)."""
        self._closed = False
        self._fill()

    async def wait_ready(self) -> None:
        """Until every worker has started (for benchmarks and tests that time calls, not starts)."""
        self.start()
        await self._ready.wait()

    async def run(self) -> None:
        """Until cancelled, then close: the pool's life as a service's runnable. Workers start at the
        first call, so a plane without scripts runs no worker."""
        self._closed = False
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        """Kill every worker and fail every call still waiting with PoolClosed."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        closed = PoolClosed("the interpreter pool was closed")
        for state in list(self._rotation):
            while state.queue:
                call = state.queue[0]
                self._unqueue(call)
                if not call.future.done():
                    call.future.set_exception(closed)
        workers = list(self._workers)
        for worker in workers:
            running, worker.call = worker.call, None
            if worker.timer is not None:
                worker.timer.cancel()
            if running is not None:
                running.script.running -= 1
                if not running.future.done():
                    running.future.set_exception(closed)
            self._retire(worker, kill=True)
        for worker in list(self._unreaped):  # retired, and maybe not gone yet
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        await asyncio.gather(*(w.reader for w in list(self._unreaped) if w.reader is not None),
                             return_exceptions=True)
        self._idle.clear()

    async def __aenter__(self) -> ScriptPool:
        self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    # -- for tests and metrics -----------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers in service."""
        return [worker.pid for worker in self._workers]

    def queued(self, script: str) -> int:
        """Calls of `script` waiting for a worker."""
        state = self._scripts.get(script)
        return len(state.queue) if state is not None else 0

    @property
    def suspended_scripts(self) -> int:
        now = self._clock.monotonic()
        return sum(1 for state in self._scripts.values() if state.suspended_until > now)


async def _read_message(stream: asyncio.StreamReader) -> Any | None:
    try:
        header = await stream.readexactly(protocol.HEADER.size)
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise
    return protocol.decode(await stream.readexactly(protocol.body_length(header)))


async def _kill(process: WorkerProcess) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()


def _exit_description(code: int) -> str:
    if code >= 0:
        return f"exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    reason = {"SIGXCPU": " (CPU time limit)", "SIGKILL": " (killed)", "SIGSEGV": " (crashed)"}.get(name, "")
    return f"died of {name}{reason}"
