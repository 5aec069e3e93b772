"""One simulated member cluster: its identity (name, token, URL), its faults, and its state."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from flotilla.aio.clock import Clock
from sim import errors
from sim.catalog import CRD, crd_document, plural_of
from sim.faults import Fault, FaultState
from sim.state import ClusterState
from sim.timers import Timers

DEFAULT_VERSION = "v1.31.0"


class SimCluster:
    def __init__(self, name: str, clock: Clock, timers: Timers, *, token: str | None = None,
                 pod_ready_delay: float = 2.0, nodes: int = 3, cpu: str = "8", memory: str = "32Gi",
                 pods: int = 110, git_version: str = DEFAULT_VERSION) -> None:
        self.name = name
        self.token = token or secrets.token_urlsafe(32)
        self.git_version = git_version
        self.faults = FaultState()
        # Old API servers have no /readyz; switching this off makes /readyz answer 404 so
        # clients fall back to /healthz.
        self.serve_readyz = True
        # What /readyz and /healthz answer while the cluster has no "unhealthy" fault. Karmada
        # counts any 2xx other than 200 as "online but not healthy"; set e.g. 202 to see that.
        self.health_status = 200
        self.url = ""
        self.kubeconfig: Path | None = None
        self.state = ClusterState(name, clock, timers, pod_ready_delay, nodes, cpu, memory, pods, git_version)

    @property
    def fault(self) -> Fault:
        return self.faults.fault

    def set_fault(self, fault: Fault | str, latency: float | None = None) -> None:
        """"down" | "unhealthy" | "unreachable" | "slow" (with `latency` seconds) | "recover"."""
        self.faults.set(fault, latency)
        self.state.store.history.wake()  # open watches see the fault at once

    def set_app_fault(self, namespace: str, name: str, healthy: bool, kind: str | None = None) -> None:
        """Make the named workload's pods stop being Ready (healthy=False) or recover."""
        self.state.set_app_fault(namespace, name, healthy, kind)

    def add_crd(self, group: str, version: str, kind: str, plural: str | None = None,
                namespaced: bool = True) -> None:
        """Install a CRD (schema-less, status subresource on) so `kind` is discoverable and served."""
        try:
            self.state.create(CRD, "", crd_document(group, version, kind, plural or plural_of(kind), namespaced))
        except errors.ApiError as e:
            if e.reason != "AlreadyExists":
                raise

    def info(self) -> dict[str, Any]:
        """What the admin API reports about this cluster."""
        faults = sorted(self.state.app_faults, key=lambda f: (f[0], f[1], f[2] or ""))
        return {
            "name": self.name,
            "url": self.url,
            "kubeconfig": str(self.kubeconfig) if self.kubeconfig else "",
            "fault": self.faults.fault.value,
            "latency": self.faults.latency,
            "serveReadyz": self.serve_readyz,
            "healthStatus": self.health_status,
            "appFaults": [{"namespace": ns, "name": name, **({"kind": kind} if kind else {})}
                          for ns, name, kind in faults],
        }
