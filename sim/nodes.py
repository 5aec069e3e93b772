"""Node objects for a simulated cluster."""

from __future__ import annotations

from typing import Any

from flotilla.member.quantity import Quantity


def node_object(cluster: str, index: int, cpu: str, memory: str, pods: int, git_version: str,
                now: str) -> dict[str, Any]:
    name = f"{cluster}-node-{index}"
    resources = {"cpu": str(Quantity.parse(cpu)), "memory": str(Quantity.parse(memory)), "pods": str(pods)}
    conditions = [
        _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
                   now),
        _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now),
        _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", now),
        _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now),
    ]
    return {
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": "flotilla-sim",
        }},
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": f"172.18.0.{index + 1}"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "kubeletVersion": git_version, "kubeProxyVersion": git_version,
                "containerRuntimeVersion": "sim://1.0", "operatingSystem": "linux", "architecture": "amd64",
                "osImage": "Flotilla simulated node", "kernelVersion": "", "machineID": "", "systemUUID": "",
                "bootID": "",
            },
        },
    }


def internal_ip(node: dict[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address", ""))
    return ""


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}
