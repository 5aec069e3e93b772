"""Pod objects and the states a simulated pod goes through.

Pending (unscheduled, PodScheduled=False/Unschedulable) -> Pending on a node (containers
creating) -> Running and Ready; a Job's pod goes to Succeeded instead; an application fault
turns a pod into Running but not Ready (containers crash-looping).
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from sim.conditions import set_condition

Obj = dict[str, Any]
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.String alphabet


def random_suffix(length: int = 5) -> str:
    return "".join(secrets.choice(_ALPHANUMS) for _ in range(length))


def owner_reference(owner: Obj) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def controller_ref(pod: Obj) -> dict[str, Any] | None:
    """The ownerReference of the pod's controller (its workload), if any."""
    return next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def controller_uid(pod: Obj) -> str | None:
    ref = controller_ref(pod)
    return None if ref is None else ref.get("uid")


def pod_from_template(owner: Obj, name: str, template: dict[str, Any], labels: dict[str, str],
                      extra_spec: dict[str, Any] | None = None) -> Obj:
    """A new Pod for `owner` from its pod template (requests copied, defaulted from limits)."""
    metadata = template.get("metadata") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    spec.update(extra_spec or {})
    default_pod_spec(spec)
    pod_metadata: dict[str, Any] = {
        "name": name, "namespace": owner["metadata"].get("namespace", "default"),
        "labels": {**(metadata.get("labels") or {}), **labels},
        "ownerReferences": [owner_reference(owner)],
    }
    if metadata.get("annotations"):
        pod_metadata["annotations"] = copy.deepcopy(metadata["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": spec}


def default_pod_spec(spec: dict[str, Any]) -> None:
    """The API server's pod defaults that matter here: requests default to limits."""
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        if limits:
            requests = resources.setdefault("requests", {})
            for name, amount in limits.items():
                requests.setdefault(name, amount)
            container["resources"] = resources
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")


def initial_status(pod: Obj) -> dict[str, Any]:
    return {"phase": "Pending", "qosClass": qos_class(pod["spec"])}


def qos_class(spec: dict[str, Any]) -> str:
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    limits = [(c.get("resources") or {}).get("limits") or {} for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    guaranteed = all(
        all(r in lim and str(req.get(r)) == str(lim.get(r)) for r in ("cpu", "memory")) and set(req) <= set(lim)
        for req, lim in zip(requests, limits, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"


def is_scheduled(pod: Obj) -> bool:
    return bool(pod["spec"].get("nodeName"))


def is_terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_ready(pod: Obj) -> bool:
    if (pod.get("status") or {}).get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in pod["status"].get("conditions") or [])


def unschedulable(pod: Obj, message: str, now: str) -> dict[str, Any]:
    status = copy.deepcopy(pod.get("status") or {})
    status["phase"] = "Pending"
    status["conditions"] = set_condition(status.get("conditions") or [], "PodScheduled", "False", "Unschedulable",
                                         message, now, probe_time=True)
    return status


def bound(pod: Obj, node: str, host_ip: str, pod_ip: str, now: str) -> dict[str, Any]:
    """Scheduled to `node`, containers being created."""
    status = copy.deepcopy(pod.get("status") or {})
    names = _container_names(pod)
    conditions: list[dict[str, Any]] = []
    for type_, value, reason, message in (
        ("PodReadyToStartContainers", "False", "", ""),
        ("Initialized", "True", "", ""),
        ("Ready", "False", "ContainersNotReady", f"containers with unready status: [{' '.join(names)}]"),
        ("ContainersReady", "False", "ContainersNotReady", f"containers with unready status: [{' '.join(names)}]"),
        ("PodScheduled", "True", "", ""),
    ):
        conditions = set_condition(conditions, type_, value, reason, message, now, probe_time=True)
    status.update({
        "phase": "Pending", "conditions": conditions, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": now,
        "containerStatuses": [_container(c, pod, {"waiting": {"reason": "ContainerCreating"}}, False, 0)
                              for c in pod["spec"].get("containers") or []],
    })
    return status


def running(pod: Obj, ready: bool, now: str) -> dict[str, Any]:
    """Running; Ready, or crash-looping (an application fault) when not `ready`."""
    status = copy.deepcopy(pod.get("status") or {})
    names = _container_names(pod)
    unready = f"containers with unready status: [{' '.join(names)}]"
    conditions = status.get("conditions") or []
    conditions = set_condition(conditions, "PodReadyToStartContainers", "True", "", "", now, probe_time=True)
    for type_ in ("Ready", "ContainersReady"):
        conditions = set_condition(conditions, type_, "True" if ready else "False",
                                   "" if ready else "ContainersNotReady", "" if ready else unready, now,
                                   probe_time=True)
    previous = {c["name"]: c for c in status.get("containerStatuses") or []}
    containers = []
    for c in pod["spec"].get("containers") or []:
        restarts = previous.get(c["name"], {}).get("restartCount", 0)
        if ready:
            state = {"running": {"startedAt": now}}
        else:
            restarts += 1
            state = {"waiting": {"reason": "CrashLoopBackOff",
                                 "message": f"back-off 10s restarting failed container={c['name']} "
                                            f"pod={pod['metadata']['name']}"}}
        containers.append(_container(c, pod, state, ready, restarts))
    status.update({"phase": "Running", "conditions": conditions, "containerStatuses": containers})
    return status


def succeeded(pod: Obj, now: str) -> dict[str, Any]:
    status = copy.deepcopy(pod.get("status") or {})
    conditions = status.get("conditions") or []
    conditions = set_condition(conditions, "PodReadyToStartContainers", "False", "", "", now, probe_time=True)
    for type_ in ("Ready", "ContainersReady"):
        conditions = set_condition(conditions, type_, "False", "PodCompleted", "", now, probe_time=True)
    started = status.get("startTime", now)
    terminated = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}}
    status.update({
        "phase": "Succeeded", "conditions": conditions,
        "containerStatuses": [_container(c, pod, terminated, False, 0) for c in pod["spec"].get("containers") or []],
    })
    return status


def _container_names(pod: Obj) -> list[str]:
    return [c.get("name", "") for c in pod["spec"].get("containers") or []]


def _container(container: dict[str, Any], pod: Obj, state: dict[str, Any], ready: bool,
               restarts: int) -> dict[str, Any]:
    image = container.get("image", "")
    return {
        "name": container.get("name", ""), "image": image, "imageID": "",
        "containerID": f"sim://{pod['metadata'].get('uid', '')[:8]}-{container.get('name', '')}",
        "ready": ready, "started": "running" in state, "restartCount": restarts, "state": state,
    }
