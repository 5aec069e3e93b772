"""A worker process with asyncio pipes, started without running anybody's fork handlers.

Why not `asyncio.create_subprocess_exec`: under uvloop (every service's loop) it starts the
child with fork(), and fork() runs every pthread_atfork handler registered in the process. gRPC
registers some: with calls in flight on its threads they skip; otherwise they stop and restart
those threads around the fork while the forking thread, the event loop's, waits; and the child,
between fork and exec, can crash in them (a worker dead of SIGSEGV before it said it was ready).
`subprocess.Popen` starts the child with vfork() and exec, which run no fork handlers: nothing of
gRPC, or of the service, is touched in the child before it is a new program. The parent waits
only until the exec, a few milliseconds.

The process's end is read from a pidfd (Linux 5.3 or later) on the loop, so nothing blocks on it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Sequence


class WorkerProcess:
    """A started child: its pid, a writer to its stdin, a reader of its stdout, `kill()`, `wait()`."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 stdout_transport: asyncio.ReadTransport, exited: asyncio.Future[None]) -> None:
        self._popen = popen
        self.stdin = stdin
        self.stdout = stdout
        self._stdout_transport = stdout_transport
        self._exited = exited

    @property
    def pid(self) -> int:
        return self._popen.pid

    def kill(self) -> None:
        """SIGKILL, unless it has already been waited for (then there is nothing to kill)."""
        self._popen.kill()

    async def wait(self) -> int:
        """Its exit status (negative: the signal that ended it), once it has ended. Both pipes are
        closed then (uvloop leaves a pipe read to its end open): read stdout to its end first."""
        await asyncio.shield(self._exited)
        self.stdin.close()
        self._stdout_transport.close()
        return self._popen.wait()


async def start(args: Sequence[str]) -> WorkerProcess:
    """Start `args` with pipes to its stdin and stdout (stderr is this process's)."""
    loop = asyncio.get_running_loop()
    # Blocks only until the child's exec (vfork): see the module docstring.
    popen = subprocess.Popen(list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # noqa: ASYNC220
    assert popen.stdin is not None and popen.stdout is not None
    exited: asyncio.Future[None] = loop.create_future()
    pidfd: int | None = None

    def ended() -> None:
        nonlocal pidfd
        if pidfd is not None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            pidfd = None
        if not exited.done():
            exited.set_result(None)

    opened: list[asyncio.BaseTransport] = []
    try:
        pidfd = os.pidfd_open(popen.pid)
        loop.add_reader(pidfd, ended)
        reader = asyncio.StreamReader()
        stdout, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), popen.stdout)
        opened.append(stdout)
        stdin, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, popen.stdin)
        opened.append(stdin)
    except BaseException:
        # Not handed over: ended here, so that nothing is left running, unreaped or open.
        popen.kill()
        popen.wait()
        ended()
        for transport in opened:
            transport.close()
        for pipe in (popen.stdin, popen.stdout):
            pipe.close()
        raise
    return WorkerProcess(popen, asyncio.StreamWriter(stdin, flow, None, loop), reader, stdout, exited)
