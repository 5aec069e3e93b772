"""Placing pods on nodes within capacity, as kube-scheduler's filters would.

A node is a candidate when it is Ready, not cordoned, matches the pod's nodeSelector and
required node affinity, and has room for the pod's requests (cpu, memory, any other requested
resource it advertises, and one pod slot) after what its bound, unfinished pods request. Among
candidates the least allocated wins (the default scoring), ties by name. Taints are not modelled.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flotilla.member.quantity import Quantity
from flotilla.member.summary import pod_requests

Obj = dict[str, Any]


@dataclass
class NodeRoom:
    name: str
    labels: Mapping[str, str]
    allocatable: dict[str, int]
    schedulable: bool
    used: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, node: Obj) -> NodeRoom:
        status = node.get("status") or {}
        allocatable = dict(_parsed(tuple((status.get("allocatable") or {}).items())))
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return cls(node["metadata"]["name"], node["metadata"].get("labels") or {}, allocatable,
                   ready and not (node.get("spec") or {}).get("unschedulable"))

    def take(self, request: Mapping[str, int]) -> None:
        for name, amount in request.items():
            self.used[name] = self.used.get(name, 0) + amount
        self.used["pods"] = self.used.get("pods", 0) + 1

    def shortfalls(self, request: Mapping[str, int]) -> list[str]:
        missing = [f"Insufficient {name}" for name, amount in sorted(request.items())
                   if amount > 0 and self.used.get(name, 0) + amount > self.allocatable.get(name, 0)]
        if self.used.get("pods", 0) + 1 > self.allocatable.get("pods", 0):
            missing.append("Too many pods")
        return missing

    def free_fraction(self, request: Mapping[str, int]) -> float:
        scores = []
        for name in ("cpu", "memory"):
            total = self.allocatable.get(name, 0)
            if total > 0:
                scores.append((total - self.used.get(name, 0) - request.get(name, 0)) / total)
        return sum(scores) / len(scores) if scores else 0.0


def rooms(nodes: Iterable[Obj], pods: Iterable[Obj], requests: Mapping[str, Mapping[str, int]]) -> dict[str, NodeRoom]:
    """Each node's capacity and what its bound, unfinished pods already take.
    `requests` caches pod uid -> requests, to avoid re-parsing quantities on every pass."""
    found = {node["metadata"]["name"]: NodeRoom.of(node) for node in nodes}
    for pod in pods:
        room = found.get(pod["spec"].get("nodeName") or "")
        if room is not None and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            # `in`, not `or`: most pods request nothing, and an empty request is cached too.
            uid = pod["metadata"]["uid"]
            room.take(requests[uid] if uid in requests else requests_of(pod))
    return found


@functools.lru_cache(maxsize=256)
def _parsed(allocatable: tuple[tuple[str, str], ...]) -> tuple[tuple[str, int], ...]:
    # Every scheduling pass rebuilds each node's room; parsing its quantities would be most of that.
    return tuple((name, Quantity.parse(amount).milli_value() if name == "cpu" else Quantity.parse(amount).value())
                 for name, amount in allocatable)


def requests_of(pod: Obj) -> dict[str, int]:
    return {name: amount for name, amount in pod_requests(pod["spec"]).items() if name != "pods"}


def place(pod: Obj, request: Mapping[str, int], nodes: Mapping[str, NodeRoom]) -> tuple[str | None, str]:
    """(node name, "") or (None, the scheduler's "0/N nodes are available: ..." message)."""
    reasons: Counter[str] = Counter()
    candidates = []
    for room in nodes.values():
        if not room.schedulable:
            reasons["node(s) were unschedulable"] += 1
        elif not _matches_node(pod, room):
            reasons["node(s) didn't match Pod's node affinity/selector"] += 1
        elif missing := room.shortfalls(request):
            reasons.update(missing)
        else:
            candidates.append(room)
    if not candidates:
        detail = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        if not detail:
            return None, "no nodes available to schedule pods"
        return None, f"0/{len(nodes)} nodes are available: {detail}."
    best = max(candidates, key=lambda r: (r.free_fraction(request), _reverse(r.name)))
    best.take(request)
    return best.name, ""


def _reverse(name: str) -> tuple[int, ...]:
    # max() picks the highest score; among equals the alphabetically first name should win.
    return tuple(-ord(ch) for ch in name)


def _matches_node(pod: Obj, room: NodeRoom) -> bool:
    spec = pod["spec"]
    for key, value in (spec.get("nodeSelector") or {}).items():
        if room.labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(_term_matches(term, room) for term in terms)


def _term_matches(term: Mapping[str, Any], room: NodeRoom) -> bool:
    fields = {"metadata.name": room.name}
    checks = [(expr, room.labels) for expr in term.get("matchExpressions") or []]
    checks += [(expr, fields) for expr in term.get("matchFields") or []]
    return all(_expression(expr, values) for expr, values in checks)


def _expression(expr: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key, op, wanted = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if op == "In":
        return values.get(key) in wanted
    if op == "NotIn":
        return values.get(key) not in wanted
    if op == "Exists":
        return key in values
    if op == "DoesNotExist":
        return key not in values
    if op in ("Gt", "Lt") and key in values and wanted:
        try:
            have, limit = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > limit if op == "Gt" else have < limit
    return False
