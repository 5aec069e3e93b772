"""Group commit: the etcd operations one process has under way at once travel as one request.

A busy service has dozens of reads and compare-and-swaps in flight (a failover's thousand
bindings, their Works, their Events), and each alone costs a gRPC call in this process and a
request, a raft entry and a WAL write in etcd. Sent as transactions of dozens of operations, the
same writes cost both sides a fraction of that.

Every operation stays what it is alone: its own nested transaction (its own compare, its own
success), so one that fails its compare fails alone. What group commit adds is that operations
submitted while a batch is under way wait and leave together when it returns, at most `max_ops`
(etcd's --max-txn-ops is 128 by default) and `max_bytes` at a time, one operation per key per
batch (etcd refuses a transaction that writes a key twice). An idle process sends each operation
at once, alone, with no wait. Only a full batch leaves beside one under way (up to `in_flight`
at once): a process with a few operations a turn sends them in a few large requests, not many
small ones, and one with more than a batch's worth waiting is not held to one request at a
time. A batch that etcd refuses as a whole (a lapsed lease, too large a request) is retried one
operation at a time, so only the culprit sees the error.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Op = TypeVar("Op")
Result = TypeVar("Result")

MAX_OPS = 64
MAX_BYTES = 512 * 1024
IN_FLIGHT = 4


@dataclass
class _Queued(Generic[Op, Result]):
    key: bytes
    size: int
    op: Op
    future: asyncio.Future[Result] = field(repr=False)


class GroupCommit(Generic[Op, Result]):
    """`send` commits a list of operations in one request and answers each, in order."""

    def __init__(self, send: Callable[[list[Op]], Awaitable[Sequence[Result]]],
                 fatal: tuple[type[BaseException], ...] = (), *, max_ops: int = MAX_OPS,
                 max_bytes: int = MAX_BYTES, in_flight: int = IN_FLIGHT) -> None:
        self._send = send
        # Errors that say etcd is unreachable: retrying a batch's operations one by one would
        # only wait for each of them to say so again.
        self._fatal = fatal
        self.max_ops = max_ops
        self.max_bytes = max_bytes
        self.in_flight = in_flight
        self._pending: deque[_Queued[Op, Result]] = deque()
        self._sending = 0
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0  # sent, for tests and benchmarks
        self.ops = 0

    async def submit(self, key: bytes, op: Op, size: int = 0) -> Result:
        loop = asyncio.get_running_loop()
        queued: _Queued[Op, Result] = _Queued(key, size, op, loop.create_future())
        self._pending.append(queued)
        if not self._scheduled and self._may_send():
            # On the next turn of the loop: what the other tasks submit on this one goes along.
            self._scheduled = True
            loop.call_soon(self._dispatch)
        return await queued.future

    def _may_send(self) -> bool:
        """Whether a batch leaves now: when none is under way, or when a full one waits and
        fewer than `in_flight` are under way (a batch returning sends what waits)."""
        if not self._pending:
            return False
        if self._sending == 0:
            return True
        return self._sending < self.in_flight and len(self._pending) >= self.max_ops

    def _dispatch(self) -> None:
        self._scheduled = False
        while self._may_send():
            batch = self._take()
            if not batch:
                break
            self._sending += 1
            task = asyncio.get_running_loop().create_task(self._commit(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take(self) -> list[_Queued[Op, Result]]:
        batch: list[_Queued[Op, Result]] = []
        keys: set[bytes] = set()
        size = 0
        later: list[_Queued[Op, Result]] = []
        while self._pending and len(batch) < self.max_ops:
            queued = self._pending.popleft()
            if queued.future.done():  # its caller was cancelled before it left
                continue
            if queued.key in keys:
                later.append(queued)
                continue
            if batch and size + queued.size > self.max_bytes:
                self._pending.appendleft(queued)
                break
            batch.append(queued)
            keys.add(queued.key)
            size += queued.size
        # A second operation on a key goes in a later batch, still ahead of newer ones.
        self._pending.extendleft(reversed(later))
        return batch

    async def _commit(self, batch: list[_Queued[Op, Result]]) -> None:
        try:
            self.batches += 1
            self.ops += len(batch)
            try:
                results = await self._send([q.op for q in batch])
            except asyncio.CancelledError:
                for queued in batch:
                    queued.future.cancel()
                raise
            except Exception as e:
                if len(batch) == 1 or isinstance(e, self._fatal):
                    for queued in batch:
                        _settle(queued, error=e)
                    return
                await asyncio.gather(*(self._alone(q) for q in batch))
                return
            for queued, result in zip(batch, results, strict=True):
                _settle(queued, result=result)
        finally:
            self._sending -= 1
            self._dispatch()

    async def _alone(self, queued: _Queued[Op, Result]) -> None:
        try:
            (result,) = await self._send([queued.op])
        except Exception as e:
            _settle(queued, error=e)
        else:
            _settle(queued, result=result)


def _settle(queued: _Queued[Op, Result], result: Result | None = None, error: BaseException | None = None) -> None:
    if queued.future.done():
        return
    if error is not None:
        queued.future.set_exception(error)
    else:
        queued.future.set_result(result)  # type: ignore[arg-type]
