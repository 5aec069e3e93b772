"""Group commit's batching rules, with a sender that records what it is handed
(tests/integration/test_store_group_commit.py runs the same through etcd)."""

from __future__ import annotations

import asyncio

import pytest

from flotilla.store.errors import StoreError, Unavailable
from flotilla.store.group_commit import GroupCommit


class Sender:
    """Answers each operation with its own text, upper-cased; refuses a batch holding "bad"."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, ops: list[str]) -> list[str]:
        self.batches.append(ops)
        if self.gate is not None:
            await self.gate.wait()
        if "bad" in ops:
            raise StoreError("etcd refused the transaction")
        if "down" in ops:
            raise Unavailable("etcd is unreachable")
        return [op.upper() for op in ops]


async def sent(sender: Sender, batches: int) -> None:
    """Until the sender has been handed this many batches (a few turns of the loop)."""
    for _ in range(100):
        if len(sender.batches) >= batches:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{len(sender.batches)} batches sent, {batches} awaited")


def group(sender: Sender, **kwargs: int) -> GroupCommit[str, str]:
    return GroupCommit(sender, fatal=(Unavailable,), **kwargs)


async def test_an_operation_alone_leaves_at_once_and_alone() -> None:
    sender = Sender()
    assert await group(sender).submit(b"a", "a") == "A"
    assert sender.batches == [["a"]]


async def test_operations_submitted_together_leave_together_and_each_gets_its_answer() -> None:
    sender = Sender()
    commit = group(sender)
    answers = await asyncio.gather(*(commit.submit(k.encode(), k) for k in "abcde"))
    assert answers == ["A", "B", "C", "D", "E"]
    assert sender.batches == [["a", "b", "c", "d", "e"]]


@pytest.mark.parametrize(("limits", "sizes", "batches"), [
    ({"max_ops": 2}, [0, 0, 0, 0, 0], [["a", "b"], ["c", "d"], ["e"]]),
    ({"max_bytes": 10}, [4, 4, 4, 20, 1], [["a", "b"], ["c"], ["d"], ["e"]]),
])
async def test_a_batch_holds_at_most_max_ops_and_max_bytes(limits: dict[str, int], sizes: list[int],
                                                          batches: list[list[str]]) -> None:
    sender = Sender()
    commit = group(sender, in_flight=1, **limits)
    answers = await asyncio.gather(*(commit.submit(k.encode(), k, size) for k, size in zip("abcde", sizes,
                                                                                           strict=True)))
    assert answers == ["A", "B", "C", "D", "E"]
    assert sender.batches == batches


async def test_a_key_is_in_a_batch_once_and_its_second_operation_keeps_its_place() -> None:
    sender = Sender()
    commit = group(sender, in_flight=1)
    ops = [(b"k", "k1"), (b"j", "j1"), (b"k", "k2"), (b"i", "i1"), (b"k", "k3")]
    assert await asyncio.gather(*(commit.submit(k, op) for k, op in ops)) == ["K1", "J1", "K2", "I1", "K3"]
    assert sender.batches == [["k1", "j1", "i1"], ["k2"], ["k3"]]


async def test_while_a_batch_is_under_way_newer_operations_wait_for_it_and_leave_together() -> None:
    sender = Sender()
    sender.gate = asyncio.Event()
    commit = group(sender, in_flight=4)
    first = asyncio.create_task(commit.submit(b"a", "a"))
    await sent(sender, 1)
    waiting = []
    for k in "bcdef":  # one a turn: each alone would have been a batch of its own
        waiting.append(asyncio.create_task(commit.submit(k.encode(), k)))
        for _ in range(3):
            await asyncio.sleep(0)
    assert sender.batches == [["a"]]
    sender.gate.set()
    assert await asyncio.gather(first, *waiting) == ["A", "B", "C", "D", "E", "F"]
    assert sender.batches == [["a"], ["b", "c", "d", "e", "f"]]


async def test_a_full_batch_leaves_beside_one_under_way_up_to_in_flight() -> None:
    sender = Sender()
    sender.gate = asyncio.Event()
    commit = group(sender, in_flight=2, max_ops=2)
    first = asyncio.create_task(commit.submit(b"a", "a"))
    await sent(sender, 1)
    full = [asyncio.create_task(commit.submit(k.encode(), k)) for k in "bcd"]
    await sent(sender, 2)
    more = [asyncio.create_task(commit.submit(k.encode(), k)) for k in "ef"]
    for _ in range(10):
        await asyncio.sleep(0)
    # Two under way: "d" and the full "e", "f" wait until one returns.
    assert sender.batches == [["a"], ["b", "c"]]
    sender.gate.set()
    assert await asyncio.gather(first, *full, *more) == ["A", "B", "C", "D", "E", "F"]
    assert sender.batches[:2] == [["a"], ["b", "c"]]
    assert sorted(op for batch in sender.batches[2:] for op in batch) == ["d", "e", "f"]


async def test_a_batch_refused_as_a_whole_is_retried_one_by_one_so_only_the_culprit_fails() -> None:
    sender = Sender()
    commit = group(sender)
    results = await asyncio.gather(*(commit.submit(k.encode(), k) for k in ["a", "bad", "c"]),
                                   return_exceptions=True)
    assert results[0] == "A" and results[2] == "C"
    assert isinstance(results[1], StoreError)
    assert sender.batches == [["a", "bad", "c"], ["a"], ["bad"], ["c"]]


async def test_an_unreachable_etcd_fails_the_whole_batch_without_retrying_each() -> None:
    sender = Sender()
    commit = group(sender)
    results = await asyncio.gather(*(commit.submit(k.encode(), k) for k in ["a", "down", "c"]),
                                   return_exceptions=True)
    assert all(isinstance(r, Unavailable) for r in results)
    assert sender.batches == [["a", "down", "c"]]


async def test_an_operation_whose_caller_gave_up_before_it_left_is_not_sent() -> None:
    sender = Sender()
    sender.gate = asyncio.Event()
    commit = group(sender, in_flight=1)
    under_way = asyncio.create_task(commit.submit(b"a", "a"))
    await sent(sender, 1)
    given_up = asyncio.create_task(commit.submit(b"b", "b"))
    kept = asyncio.create_task(commit.submit(b"c", "c"))
    await asyncio.sleep(0)
    given_up.cancel()
    sender.gate.set()
    assert await under_way == "A"
    assert await kept == "C"
    assert given_up.cancelled()
    assert sender.batches == [["a"], ["c"]]
