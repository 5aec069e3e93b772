"""Where a cluster's pods run and when they turn Ready: its scheduler and its nodes' kubelets.

A new pod waits until it fits on a node; once bound it turns Running and Ready after the
pod-ready delay (measured on the Clock), or Succeeded if a Job owns it. Under an application
fault a workload's pods crash-loop (Running, not Ready); when the fault clears they restart and
are Ready again after the delay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flotilla.aio.clock import Clock
from sim import pods
from sim.catalog import NODE, POD
from sim.nodes import internal_ip
from sim.objects import ObjectStore
from sim.scheduling import place, requests_of, rooms
from sim.timefmt import rfc3339
from sim.timers import Timer, Timers

Obj = dict[str, Any]
AppFault = tuple[str, str, str | None]  # namespace, workload name, kind (None: any kind)


class Kubelets:
    def __init__(self, store: ObjectStore, clock: Clock, timers: Timers, ready_delay: float,
                 changed: Callable[[Obj], None], settle: Callable[[], None]) -> None:
        self.store = store
        self.clock = clock
        self.timers = timers
        self.ready_delay = ready_delay
        self.app_faults: set[AppFault] = set()
        self._changed = changed  # a pod's state moved: its owner's status needs recomputing
        self._settle = settle  # let the cluster react after a timed step
        self._pending: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name), in arrival order
        self._timers: dict[str, Timer] = {}
        self._requests: dict[str, dict[str, int]] = {}  # uid -> requests, parsed once
        self._addresses = 0

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def admit(self, pod: Obj) -> None:
        """A pod was created: queue it for the scheduler, or start it if it names its node."""
        uid = pod["metadata"]["uid"]
        pods.default_pod_spec(pod["spec"])
        self._requests[uid] = requests_of(pod)
        pod["status"] = pods.initial_status(pod)
        node_name = pod["spec"].get("nodeName")
        node = self.store.get(NODE, "", node_name) if node_name else None
        if node is not None:
            self._bind(pod, node)
        elif not node_name:
            self._pending[uid] = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        self._changed(pod)

    def forget(self, pod: Obj) -> None:
        """A pod was deleted."""
        uid = pod["metadata"]["uid"]
        self._pending.pop(uid, None)
        self._requests.pop(uid, None)
        timer = self._timers.pop(uid, None)
        if timer is not None:
            timer.cancel()

    def schedule(self) -> None:
        """Bind every pending pod that fits now; the rest say why they do not."""
        if not self._pending:
            return
        capacity = rooms(self.store.items(NODE), self.store.items(POD), self._requests)
        for uid, (namespace, name) in list(self._pending.items()):
            pod = self.store.get(POD, namespace, name)
            if pod is None or pod["metadata"]["uid"] != uid:
                del self._pending[uid]
                continue
            node_name, message = place(pod, self._requests[uid], capacity)
            if node_name is None:
                self.store.set_status(pod, pods.unschedulable(pod, message, self._now()))
                continue
            del self._pending[uid]
            pod["spec"]["nodeName"] = node_name
            self._bind(pod, self.store.require(NODE, "", node_name))
            self._changed(pod)

    def set_app_fault(self, namespace: str, name: str, healthy: bool, kind: str | None = None) -> None:
        if healthy:
            self.app_faults = {f for f in self.app_faults
                               if not (f[0] == namespace and f[1] == name and kind in (None, f[2]))}
            self.app_faults.discard((namespace, name, None))
        else:
            self.app_faults.add((namespace, name, kind))
        for pod in list(self.store.items(POD, namespace)):
            if pod["status"].get("phase") != "Running":
                continue  # pods that have not started pick the fault up when they do
            if self.faulted(pod) and pods.is_ready(pod):
                self.store.set_status(pod, pods.running(pod, ready=False, now=self._now()))
                self._changed(pod)
            elif not self.faulted(pod) and not pods.is_ready(pod) and pod["metadata"]["uid"] not in self._timers:
                self._start_timer(pod)  # the crashed containers restart and pass readiness again

    def faulted(self, pod: Obj) -> bool:
        owner = pods.controller_ref(pod)
        if owner is None:
            return False
        namespace = pod["metadata"].get("namespace", "")
        return bool({(namespace, owner["name"], owner["kind"]), (namespace, owner["name"], None)} & self.app_faults)

    def _bind(self, pod: Obj, node: Obj) -> None:
        self._addresses += 1
        pod_ip = f"10.244.{(self._addresses // 250) % 256}.{self._addresses % 250 + 2}"
        self.store.set_status(pod, pods.bound(pod, node["metadata"]["name"], internal_ip(node), pod_ip, self._now()))
        self._start_timer(pod)

    def _start_timer(self, pod: Obj) -> None:
        uid, namespace, name = pod["metadata"]["uid"], pod["metadata"]["namespace"], pod["metadata"]["name"]
        previous = self._timers.pop(uid, None)
        if previous is not None:
            previous.cancel()
        self._timers[uid] = self.timers.call_later(self.ready_delay, lambda: self._started(uid, namespace, name))

    def _started(self, uid: str, namespace: str, name: str) -> None:
        """The pod-ready delay is over: Ready, Succeeded (a Job's pod) or crash-looping."""
        self._timers.pop(uid, None)
        pod = self.store.get(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or pods.is_terminated(pod):
            return
        now = self._now()
        if self.faulted(pod):
            status = pods.running(pod, ready=False, now=now)
        elif (pods.controller_ref(pod) or {}).get("kind") == "Job":
            status = pods.succeeded(pod, now)
        else:
            status = pods.running(pod, ready=True, now=now)
        self.store.set_status(pod, status)
        self._changed(pod)
        self._settle()

    def _now(self) -> str:
        return rfc3339(self.clock.now())
