"""Push members as the status service's prober reads them: health from the probe thread, the
collection from this loop, credentials from a cache; nothing kept per member but a connection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.member_http import MemberReader, MemberSession
from flotilla.clusterstatus.probe_thread import ProbeThread
from flotilla.member import Credentials, Health

# An idle connection outlives a few periods of the reads that reuse it, but not an API server's
# own idle timeout (kube-apiserver's is 90 s), which would close it under a request.
_KEEPALIVE_MIN, _KEEPALIVE_MAX = 15.0, 60.0


def keepalive_for(period: float) -> float:
    return min(max(3 * period, _KEEPALIVE_MIN), _KEEPALIVE_MAX)


@dataclass(frozen=True)
class PushMember(MemberReader):
    probes: ProbeThread

    async def health(self) -> Health:
        return await self.probes.health(self.credentials)


class PushMembers:
    """`async with` it around the prober's life: it runs the probe thread."""

    def __init__(self, credentials: Callable[[cluster_pb2.Cluster], Awaitable[Credentials]], timeout: float,
                 probe_period: float, collect_period: float, observe: Callable[[float], None] | None = None) -> None:
        self.credentials = credentials
        self.probes = ProbeThread(timeout, keepalive_for(probe_period), observe)
        self.collection = MemberSession(timeout, keepalive_for(max(probe_period, collect_period)))

    async def get(self, cluster: cluster_pb2.Cluster) -> PushMember:
        return PushMember(self.collection, await self.credentials(cluster), self.probes)

    async def __aenter__(self) -> PushMembers:
        self.probes.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.probes.close()
        await self.collection.close()
