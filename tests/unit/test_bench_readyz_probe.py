"""The failover benchmark's `/readyz` prober: a probe that times out counts as a latency of the
timeout, each member is reported on its own, and the members failed on purpose are left out of
the figures over all of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from flotilla.plane.benchmarks.readyz_probe import Probed, Target, probe, report
from tests.http_serving import serving


class Members:
    """member1 and member3 hang, member2 answers at once; `second_round` is set when member3 is
    asked a second time, so its first probe is over (the prober asks one member at a time)."""

    def __init__(self) -> None:
        self.hold = asyncio.Event()
        self.second_round = asyncio.Event()
        self.asked: dict[str, int] = {}
        self.targets: dict[str, Target] = {}

    async def readyz(self, request: web.Request) -> web.Response:
        name = request.match_info["member"]
        self.asked[name] = self.asked.get(name, 0) + 1
        if name == "member3" and self.asked[name] == 2:
            self.second_round.set()
        if name != "member2":
            await self.hold.wait()
        return web.Response(text="ok")


@pytest.fixture
async def members() -> AsyncIterator[Members]:
    served = Members()
    app = web.Application()
    app.router.add_get("/{member}/readyz", served.readyz)
    async with serving(app) as url:
        served.targets = {name: (f"{url}/{name}", "token", None) for name in ("member1", "member2", "member3")}
        try:
            yield served
        finally:
            served.hold.set()


async def test_a_probe_that_times_out_counts_at_the_timeout_per_member(members: Members) -> None:
    stop = asyncio.Event()
    probing = asyncio.create_task(probe(members.targets, interval=0.001, timeout=0.2, failed={"member1"},
                                        stop=stop))
    await asyncio.wait_for(members.second_round.wait(), 30)
    stop.set()
    out = await asyncio.wait_for(probing, 30)
    hung, fast = out["members"]["member3"], out["members"]["member2"]
    assert hung["timeouts"] >= 1 and hung["failures"] == hung["timeouts"] == hung["probes"]
    assert hung["p50"] == hung["max"] == 200.0
    assert fast["probes"] >= 1 and fast["timeouts"] == fast["failures"] == 0 and fast["max"] < 200.0
    # member1, failed on purpose, is reported on its own and left out of the figures over all.
    assert out["left_out"] == ["member1"] and out["members"]["member1"]["timeouts"] >= 1
    assert out["probes"] == hung["probes"] + fast["probes"]
    assert out["timeouts"] == hung["timeouts"] and out["max"] == 200.0 and out["timeout_ms"] == 200


def test_refused_probes_are_failures_without_a_latency() -> None:
    down = Probed()
    down.refused()
    down.answered(3.0, ok=False)
    assert down.report() == {"probes": 1, "failures": 2, "timeouts": 0, "p50": 3.0, "p99": 3.0, "max": 3.0}
    out = report({"member1": down}, failed=set(), timeout=1.0)
    assert out["failures"] == 2 and out["left_out"] == []
