"""Issue 14: a Ready member is probed at every period but listed in full (version, discovery,
every node and pod) only every `--cluster-collect-period`, so a hundred busy members' probes do
not queue behind those lists; a member turning Ready is collected at once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.member import Health


class Member:
    """A member's API as the prober uses it; counts the full collections."""

    def __init__(self) -> None:
        self.healthy = True
        self.collected = 0

    async def health(self) -> Health:
        return Health(online=True, healthy=self.healthy)

    async def version(self) -> str:
        self.collected += 1
        return "v1.31.0"

    async def api_enablements(self) -> list[tuple[str, list[tuple[str, str]]]]:
        return [("v1", [("pods", "Pod")])]

    async def list_nodes(self) -> list[dict[str, Any]]:
        return []

    async def list_pods(self) -> list[dict[str, Any]]:
        return []


async def test_a_ready_member_is_collected_once_a_period_and_at_once_when_it_turns_ready() -> None:
    clock = FakeClock(start=RealClock().now())
    prober = ClusterProber(clock, Thresholds(success=timedelta(0), failure=timedelta(0)), collect_period=10.0)
    member = Member()
    status = cluster_pb2.ClusterStatus()

    async def probe() -> None:
        async def connect() -> Any:
            return member

        (await prober.probe("member1", status, connect)).apply(status)

    await probe()
    assert member.collected == 1 and status.kubernetes_version == "v1.31.0"
    for _ in range(9):
        await clock.advance(1)
        await probe()
    assert member.collected == 1, "probed ten times in 9 s, collected once"
    await clock.advance(1)
    await probe()
    assert member.collected == 2
    member.healthy = False
    await clock.advance(1)
    await probe()
    member.healthy = True
    await clock.advance(1)
    await probe()
    assert member.collected == 3, "collected again as soon as it is Ready again"


async def test_the_status_service_collects_apart_from_the_probe_and_only_into_a_ready_status() -> None:
    clock = FakeClock(start=RealClock().now())
    prober = ClusterProber(clock, Thresholds(success=timedelta(0), failure=timedelta(0)), collect_period=10.0)
    member = Member()
    status = cluster_pb2.ClusterStatus()

    async def connect() -> Any:
        return member

    async def probe() -> bool:
        update = await prober.probe("member1", status, connect, collect=False)
        update.apply(status)
        return update.collect_due

    assert await probe() and member.collected == 0, "due, left to the caller"
    await clock.advance(1)
    assert not await probe(), "asked for once a period, not at every probe until it is made"
    collection = await prober.collect(member)
    assert collection.apply(status) and status.kubernetes_version == "v1.31.0"
    member.healthy = False
    await clock.advance(1)
    assert not await probe()
    status.kubernetes_version = ""
    assert not collection.apply(status) and not status.kubernetes_version, "not into a status that is not Ready"
