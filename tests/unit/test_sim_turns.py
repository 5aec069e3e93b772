"""Requests take turns: one per pass of the event loop, first come first served."""

import asyncio
import itertools

from sim.turns import Turns


async def test_one_turn_per_pass_in_arrival_order_skipping_who_left() -> None:
    turns, order = Turns(), []

    async def request(i: int) -> None:
        await turns.take()
        order.append(i)

    tasks = [asyncio.create_task(request(i)) for i in range(5)]
    await asyncio.sleep(0)  # every request is waiting for its turn
    tasks[2].cancel()  # its client went away
    seen = []
    for _ in range(20):
        await asyncio.sleep(0)
        seen.append(len(order))
    assert order == [0, 1, 3, 4]
    # Between two turns the loop made at least one more pass (and polled its sockets).
    assert all(b - a <= 1 for a, b in itertools.pairwise(seen))
    await asyncio.gather(*tasks, return_exceptions=True)
