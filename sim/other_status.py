"""Status for the non-workload kinds whose health Karmada interprets (docs/karmada-rules.md §13), filled in the
way their controllers would settle: LoadBalancer Services and Ingresses get an address, PVCs are
Bound, PodDisruptionBudgets count their healthy pods, CRDs are Established."""

from __future__ import annotations

import copy
from typing import Any

from sim.conditions import set_condition
from sim.pods import is_ready, is_terminated
from sim.selectors import label_selector_matcher, labels_of
from sim.workloads import int_or_percent

Obj = dict[str, Any]


def load_balancer_status(address: str) -> dict[str, Any]:
    return {"loadBalancer": {"ingress": [{"ip": address}]}}


def service_status(svc: Obj, address: str) -> dict[str, Any]:
    if (svc.get("spec") or {}).get("type") == "LoadBalancer":
        current = (svc.get("status") or {}).get("loadBalancer", {}).get("ingress")
        return {"loadBalancer": {"ingress": current}} if current else load_balancer_status(address)
    return {"loadBalancer": {}}


def ingress_status(ingress: Obj, address: str) -> dict[str, Any]:
    current = (ingress.get("status") or {}).get("loadBalancer", {}).get("ingress")
    return {"loadBalancer": {"ingress": current}} if current else load_balancer_status(address)


def pvc_status(pvc: Obj) -> dict[str, Any]:
    spec = pvc.get("spec") or {}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    status: dict[str, Any] = {"phase": "Bound", "accessModes": copy.deepcopy(spec.get("accessModes") or [])}
    if storage:
        status["capacity"] = {"storage": storage}
    return status


def pdb_status(pdb: Obj, pods: list[Obj], now: str) -> dict[str, Any]:
    spec = pdb.get("spec") or {}
    match = label_selector_matcher(spec.get("selector"))
    selected = [p for p in pods if not is_terminated(p) and match(labels_of(p))]
    expected = len(selected)
    healthy = sum(1 for p in selected if is_ready(p))
    if "minAvailable" in spec:
        desired = int_or_percent(spec["minAvailable"], expected, round_up=True)
    elif "maxUnavailable" in spec:
        desired = max(expected - int_or_percent(spec["maxUnavailable"], expected, round_up=True), 0)
    else:
        desired = expected
    allowed = max(healthy - desired, 0)
    conditions = set_condition((pdb.get("status") or {}).get("conditions") or [], "DisruptionAllowed",
                               "True" if allowed else "False", "SufficientPods" if allowed else "InsufficientPods",
                               "", now)
    return {"observedGeneration": pdb["metadata"].get("generation", 1), "disruptionsAllowed": allowed,
            "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
            "conditions": conditions}


def crd_status(crd: Obj, now: str) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    conditions: list[dict[str, Any]] = (crd.get("status") or {}).get("conditions") or []
    conditions = set_condition(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
    conditions = set_condition(conditions, "Established", "True", "InitialNamesAccepted",
                               "the initial names have been accepted", now)
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    return {"conditions": conditions, "acceptedNames": copy.deepcopy(spec.get("names") or {}),
            "storedVersions": stored}


def namespace_status(ns: Obj) -> dict[str, Any]:
    terminating = bool(ns["metadata"].get("deletionTimestamp"))
    return {"phase": "Terminating" if terminating else "Active"}

