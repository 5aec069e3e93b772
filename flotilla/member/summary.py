"""Cluster.status nodeSummary and resourceSummary, computed the way Karmada's cluster status
controller does (`getNodeSummary`, `getResourceSummary` and `util.Resource`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from flotilla.member.quantity import Format, Quantity, format_quantity

__all__ = ["node_summary", "pod_requests", "resource_summary", "summarized_node", "summarized_pod"]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"


def node_summary(nodes: list[dict[str, Any]]) -> dict[str, int]:
    ready = sum(1 for node in nodes if _node_ready(node))
    return {"totalNum": len(nodes), "readyNum": ready}


def resource_summary(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """{"allocatable", "allocating", "allocated"} as Kubernetes quantity strings.

    allocatable sums the nodes' status.allocatable; allocating is the requests of pods not yet
    bound to a node; allocated is the requests of bound pods that are not Succeeded/Failed (the
    scheduler stops counting those). Zero amounts are left out, as Karmada does.
    """
    allocating, allocated = _Resource(), _Resource()
    pending = bound = 0
    for pod in pods:
        spec = pod.get("spec") or {}
        if not spec.get("nodeName"):
            allocating.add_pod_request(spec)
            pending += 1
        elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            allocated.add_pod_request(spec)
            bound += 1
    allocating.add(PODS, pending)
    allocated.add(PODS, bound)
    return {
        "allocatable": _allocatable(nodes),
        "allocating": allocating.resource_list(),
        "allocated": allocated.resource_list(),
    }


def summarized_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """What `node_summary` and `resource_summary` read of a node, and nothing else: a cache of
    every node of a member keeps only this (as Karmada's informers transform what they keep)."""
    status = node.get("status") or {}
    return {"status": {"allocatable": status.get("allocatable") or {},
                       "conditions": [{"type": c.get("type"), "status": c.get("status")}
                                      for c in status.get("conditions") or [] if c.get("type") == "Ready"]}}


def summarized_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """What `resource_summary` reads of a pod: its node, phase and requests."""
    spec = pod.get("spec") or {}
    kept: dict[str, Any] = {"nodeName": spec.get("nodeName", "")}
    for containers in ("containers", "initContainers"):
        if spec.get(containers):
            kept[containers] = [{"resources": {"requests": _requests(c)}} for c in spec[containers]]
    if spec.get("overhead"):
        kept["overhead"] = spec["overhead"]
    return {"spec": kept, "status": {"phase": (pod.get("status") or {}).get("phase", "")}}


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """One pod's effective requests in base units (cpu in millicores, others in whole units):
    the sum over containers, raised to any init container's request, plus overhead."""
    resource = _Resource()
    resource.add_pod_request(spec)
    return dict(resource.amounts)


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _allocatable(nodes: list[dict[str, Any]]) -> dict[str, str]:
    # Quantity.Add keeps the first node's format for each resource, so summing Quantities (not
    # integers) reproduces "96Gi" for three "32Gi" nodes and "98647044Ki" for "32882348Ki" ones.
    total: dict[str, Quantity] = {}
    for node in nodes:
        for name, amount in ((node.get("status") or {}).get("allocatable") or {}).items():
            quantity = Quantity.parse(amount)
            total[name] = total[name] + quantity if name in total else quantity
    return {name: str(quantity) for name, quantity in total.items()}


class _Resource:
    """Karmada's `util.Resource`: integer amounts per resource name, cpu kept in millicores."""

    def __init__(self) -> None:
        self.amounts: dict[str, int] = {}

    def add(self, name: str, amount: int) -> None:
        """Add `amount`, in base units (`_parsed`)."""
        if _counted(name):
            self.amounts[name] = self.amounts.get(name, 0) + amount

    def set_max(self, name: str, amount: int) -> None:
        if _counted(name):
            self.amounts[name] = max(self.amounts.get(name, 0), amount)

    def add_pod_request(self, spec: Mapping[str, Any]) -> None:
        # Karmada raises the running total (not the pod's own sum) to each init container's
        # request; reproduced as is so the numbers match Karmada's.
        for container in spec.get("containers") or []:
            for name, amount in _requests(container).items():
                self.add(name, _parsed(name, amount))
        for container in spec.get("initContainers") or []:
            for name, amount in _requests(container).items():
                self.set_max(name, _parsed(name, amount))
        for name, amount in (spec.get("overhead") or {}).items():
            self.add(name, _parsed(name, amount))

    def resource_list(self) -> dict[str, str]:
        result = {}
        for name, amount in self.amounts.items():
            if amount <= 0:
                continue
            if name == CPU:
                result[name] = format_quantity(Fraction(amount, 1000), Format.DECIMAL_SI)
            elif name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
                result[name] = format_quantity(amount, Format.BINARY_SI)
            else:
                result[name] = format_quantity(amount, Format.DECIMAL_SI)
        return result


def _requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return (container.get("resources") or {}).get("requests") or {}


def _base_units(name: str, quantity: Quantity) -> int:
    return quantity.milli_value() if name == CPU else quantity.value()


@functools.lru_cache(maxsize=4096)
def _parsed(name: str, amount: str | int | float) -> int:
    """A request in base units, parsed once per distinct (name, amount): a member's pods repeat
    a handful of them, and each collection sums every pod's afresh (parsing them every time would
    be most of the status service's work at ten thousand pods)."""
    return _base_units(name, Quantity.parse(amount))


def _counted(name: str) -> bool:
    """cpu, memory, pods, ephemeral-storage and scalar resources (extended, hugepages,
    kubernetes.io-prefixed, attachable volumes); anything else Karmada ignores."""
    if name in (CPU, MEMORY, PODS, EPHEMERAL_STORAGE):
        return True
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return "/" in name and not name.startswith("requests.")

