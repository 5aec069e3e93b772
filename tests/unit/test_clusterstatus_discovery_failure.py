"""A discovery request that fails (a busy member timing out) leaves the cluster's apiEnablements
as they were, marked Partial: publishing none made the scheduler's APIEnablement filter reject a
healthy cluster, and a failover whose backup it was failed with NoClusterFit."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flotilla.api.conditions import get_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.collect import COMPLETE_API_ENABLEMENTS, apply_collected, collect
from flotilla.member import Health, MemberError

NOW = datetime(2026, 11, 25, tzinfo=UTC)
SERVED = [("apps/v1", [("deployments", "Deployment")]), ("v1", [("pods", "Pod")])]


class Member:
    def __init__(self, discovery_fails: bool) -> None:
        self.discovery_fails = discovery_fails

    async def health(self) -> Health:
        return Health(online=True, healthy=True)

    async def version(self) -> str:
        return "v1.31.0"

    async def api_enablements(self) -> list[tuple[str, list[tuple[str, str]]]]:
        if self.discovery_fails:
            raise MemberError("https://member1", "discover apps/v1", "timed out after 1s")
        return SERVED

    async def list_nodes(self) -> list[dict[str, Any]]:
        return []

    async def list_pods(self) -> list[dict[str, Any]]:
        return []


def served(status: cluster_pb2.ClusterStatus) -> list[str]:
    return [e.group_version for e in status.api_enablements]


async def test_failed_discovery_keeps_the_apis_last_seen_and_says_partial() -> None:
    status = cluster_pb2.ClusterStatus()
    apply_collected(status, await collect(Member(discovery_fails=False)), NOW)
    assert served(status) == ["apps/v1", "v1"]

    apply_collected(status, await collect(Member(discovery_fails=True)), NOW)
    assert served(status) == ["apps/v1", "v1"]
    condition = get_condition(status.conditions, COMPLETE_API_ENABLEMENTS)
    assert condition is not None and (condition.status, condition.reason) == ("False", "Partial")

    apply_collected(status, await collect(Member(discovery_fails=False)), NOW)
    condition = get_condition(status.conditions, COMPLETE_API_ENABLEMENTS)
    assert condition is not None and (condition.status, condition.reason) == ("True", "Complete")


async def test_a_first_discovery_that_fails_publishes_nothing_yet() -> None:
    status = cluster_pb2.ClusterStatus()
    apply_collected(status, await collect(Member(discovery_fails=True)), NOW)
    assert served(status) == []
    condition = get_condition(status.conditions, COMPLETE_API_ENABLEMENTS)
    assert condition is not None and condition.reason == "Partial"
