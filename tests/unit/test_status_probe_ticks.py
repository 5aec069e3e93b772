"""Push members are probed on shared ticks of the update frequency, so that a period's probes go
out together (services/status/push.py): the rule as a table, then the reconciler bringing two
members probed at different moments into step."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from typing import cast

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_FINALIZER
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.push_members import PushMembers
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.member import Health
from flotilla.store import Informer, MemoryStore
from services.status.push import PushStatusReconciler, since_tick, until_next_probe


@pytest.mark.parametrize(("now", "period", "wait"), [
    (0.0, 1.0, 1.0),        # on a tick: the next one
    (10.25, 1.0, 0.75),     # between ticks: the next one
    (10.5, 1.0, 0.5),       # half a period away is far enough
    (10.75, 1.0, 1.25),     # nearer than half a period: the one after
    (10.999, 1.0, 1.001),
    (7.0, 2.5, 0.5 + 2.5),  # 7.0 is 0.5 before the tick at 7.5
    (3.0, 10.0, 7.0),
    (0.3, 0.0, 0.0),        # no period: as asked
])
def test_the_next_probe_is_the_next_shared_tick_at_least_half_a_period_away(now: float, period: float,
                                                                            wait: float) -> None:
    assert until_next_probe(now, period) == pytest.approx(wait)


class Answering:
    """Members that answer every probe, Healthy or not as the test says (the probes' HTTP is
    covered by the integration tests of PushMembers; here only when they are asked matters)."""

    healthy = True

    async def health(self) -> Health:
        return Health(online=True, healthy=self.healthy)

    async def get(self, _: cluster_pb2.Cluster) -> Answering:
        return self


def cluster(name: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name = name
    c.metadata.finalizers.append(CLUSTER_FINALIZER)
    c.spec.sync_mode = "Push"
    return c


@pytest.mark.parametrize(("now", "period", "lag"), [
    (10.0, 1.0, 0.0),      # on its tick
    (10.03, 1.0, 0.03),    # a turn late in the burst: the tick at 10
    (10.49, 1.0, 0.49),
    (10.5, 1.0, 0.0),      # half a period on: off the ticks, as it runs
    (10.9, 1.0, 0.0),
    (7.6, 2.5, 0.1),       # the tick at 7.5
    (3.0, 0.0, 0.0),       # no period
])
def test_a_probe_is_stamped_with_the_tick_it_belongs_to(now: float, period: float, lag: float) -> None:
    assert since_tick(now, period) == pytest.approx(lag)


class TwoReadClock(FakeClock):
    """A machine's wall clock read a few microseconds off its monotonic one (`skew`), by another
    amount at each probe, as two reads of real clocks are."""

    skew = timedelta(0)

    def now(self) -> datetime:
        return super().now() + self.skew


@pytest.fixture
async def clusters() -> AsyncIterator[tuple[TwoReadClock, Informer[cluster_pb2.Cluster]]]:
    clock = TwoReadClock()
    store = MemoryStore(clock)
    for name in ("member1", "member2"):
        await store.create(cluster(name))
    informer = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    yield clock, informer
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await store.close()


async def test_members_probed_at_different_moments_are_next_probed_together(
        clusters: tuple[TwoReadClock, Informer[cluster_pb2.Cluster]]) -> None:
    clock, informer = clusters
    prober = ClusterProber(clock, Thresholds(success=timedelta(seconds=3), failure=timedelta(seconds=3)))
    reconciler = PushStatusReconciler(informer.store, informer, prober, cast(PushMembers, Answering()),
                                      frequency=1.0, collect=lambda _: None)
    due = {}
    for name, at in (("member1", 0.2), ("member2", 0.45)):
        await clock.advance(at - clock.monotonic())
        result = await reconciler.reconcile(name)
        assert result is not None and result.requeue_after is not None
        due[name] = clock.monotonic() + result.requeue_after
    assert due["member1"] == pytest.approx(1.0)
    assert due["member2"] == pytest.approx(1.0)


def probing_member1(clock: TwoReadClock, informer: Informer[cluster_pb2.Cluster],
                    members: Answering) -> Callable[..., Awaitable[str]]:
    """A 2 s threshold on 1 s ticks; the returned call probes member1 at a monotonic time, the
    wall clock read `skew_us` off it, and says the Ready status stored after the probe."""
    prober = ClusterProber(clock, Thresholds(success=timedelta(seconds=2), failure=timedelta(seconds=2)))
    reconciler = PushStatusReconciler(informer.store, informer, prober, cast(PushMembers, members),
                                      frequency=1.0, collect=lambda _: None)

    async def probe_at(at: float, skew_us: int = 0) -> str:
        await clock.advance(at - clock.monotonic())
        clock.skew = timedelta(microseconds=skew_us)
        await reconciler.reconcile("member1")
        stored = await informer.store.get(registry.CLUSTER, "", "member1")
        return next(c.status for c in stored.status.conditions if c.type == "Ready")

    return probe_at


async def test_a_failure_threshold_of_whole_periods_is_passed_on_time_whatever_the_turns_in_the_bursts(
        clusters: tuple[TwoReadClock, Informer[cluster_pb2.Cluster]]) -> None:
    """member1 fails from the probe of tick 10 on, its turn coming later in that burst than in the
    next two: with a 2 s threshold it is published not Ready at tick 12, not a period later."""
    members = Answering()
    probe_at = probing_member1(*clusters, members)
    assert await probe_at(9.01) == "True"
    members.healthy = False
    assert await probe_at(10.04) == "True"  # the first failure, late in its burst
    assert await probe_at(11.01) == "True"
    assert await probe_at(12.02) == "False"  # 2 s after it by the ticks, 1.98 s by the clock


async def test_the_threshold_is_passed_on_time_whatever_microseconds_the_two_clocks_differ_by(
        clusters: tuple[TwoReadClock, Informer[cluster_pb2.Cluster]]) -> None:
    """The first failure's stamp reads the wall clock 4 µs late, the third's 3 µs early: 2 s apart
    by the ticks, 1.999993 s by the stamps, and not Ready at tick 12 all the same (it was at 13)."""
    members = Answering()
    probe_at = probing_member1(*clusters, members)
    assert await probe_at(9.01) == "True"
    members.healthy = False
    assert await probe_at(10.01, skew_us=4) == "True"
    assert await probe_at(11.01) == "True"
    assert await probe_at(12.01, skew_us=-3) == "False"
