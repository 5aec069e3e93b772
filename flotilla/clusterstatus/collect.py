"""Collecting what Cluster.status reports besides Ready (docs/karmada-rules.md §3 step 5)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from flotilla.api.conditions import FALSE, TRUE, set_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.member import Health, node_summary, resource_summary

log = logging.getLogger(__name__)

COMPLETE_API_ENABLEMENTS = "CompleteAPIEnablements"


class Member(Protocol):
    """A member as the prober reads it: the executor's `MemberClient` (Pull agent), or the status
    service's probe-thread health with one-connection collection (`flotilla.clusterstatus.push_members`)."""

    async def health(self) -> Health: ...

    async def version(self) -> str: ...

    async def api_enablements(self) -> list[tuple[str, list[tuple[str, str]]]]: ...

    async def list_nodes(self) -> list[dict[str, Any]]: ...

    async def list_pods(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Collected:
    kubernetes_version: str
    # None: discovery failed, and the APIs the cluster was last seen serving stand.
    api_enablements: list[tuple[str, list[tuple[str, str]]]] | None
    complete: bool
    node_summary: dict[str, int] = field(default_factory=dict)
    resource_summary: dict[str, dict[str, str]] = field(default_factory=dict)


async def collect(client: Member) -> Collected:
    version = await client.version()
    enablements: list[tuple[str, list[tuple[str, str]]]] | None
    try:
        enablements, complete = await client.api_enablements(), True
    except Exception as e:
        # One discovery request timing out on a busy member is no sign that its APIs went away:
        # publishing none would make the scheduler's APIEnablement filter reject a healthy
        # cluster (a failover's backup among them) until the next collection.
        log.warning("event=discovery-failed server=%s error=%s: %s", getattr(client, "server", ""),
                    type(e).__name__, e)
        enablements, complete = None, False
    nodes = await client.list_nodes()
    pods = await client.list_pods()
    return Collected(version, enablements, complete, node_summary(nodes), resource_summary(nodes, pods))


def apply_collected(status: cluster_pb2.ClusterStatus, collected: Collected, now: datetime) -> None:
    status.kubernetes_version = collected.kubernetes_version
    if collected.api_enablements is not None:
        del status.api_enablements[:]
        for group_version, resources in collected.api_enablements:
            status.api_enablements.add(
                group_version=group_version,
                resources=[cluster_pb2.APIResource(name=n, kind=k) for n, k in resources],
            )
    if not collected.complete:
        set_condition(status.conditions, COMPLETE_API_ENABLEMENTS, FALSE, "Partial",
                      f"might collect partial APIEnablements({len(status.api_enablements)}) from the cluster", now)
    elif collected.api_enablements:
        set_condition(status.conditions, COMPLETE_API_ENABLEMENTS, TRUE, "Complete",
                      "collected complete APIEnablements from the cluster", now)
    else:
        set_condition(status.conditions, COMPLETE_API_ENABLEMENTS, FALSE, "Empty",
                      "collected empty APIEnablements from the cluster", now)
    status.node_summary.total_num = collected.node_summary.get("totalNum", 0)
    status.node_summary.ready_num = collected.node_summary.get("readyNum", 0)
    summary = status.resource_summary
    for name in ("allocatable", "allocating", "allocated"):
        target = getattr(summary, name)
        target.clear()
        target.update(collected.resource_summary.get(name, {}))
