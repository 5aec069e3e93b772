"""deploy/k8s's monitoring (overlays/monitoring, components/monitoring): the base plus two PodMonitors
and the alerts as a PrometheusRule, each of the operator's shape (custom_resources.py); every pod
of the six services and etcd is scraped by exactly one PodMonitor, on a port its container names
and the NetworkPolicies open to a Prometheus in a namespace labelled as docs/deploy.md says."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from tests.deploy.custom_resources import CUSTOM_KINDS, validate
from tests.deploy.manifests import KUBECTL, SERVICES, Obj, Peer, find, ingress_allowed, one, render, selects

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (with kustomize) is not installed")

PROMETHEUS = Peer("prometheus", {"app.kubernetes.io/name": "prometheus"}, "monitoring",
                  {"kubernetes.io/metadata.name": "monitoring", "flotilla.io/metrics": "allowed"})
UNLABELLED = Peer("prometheus", {"app.kubernetes.io/name": "prometheus"}, "other",
                  {"kubernetes.io/metadata.name": "other"})


def test_the_overlay_is_the_base_with_pod_monitors_and_the_rules() -> None:
    base, monitoring = render("base"), render("monitoring")
    added = [o for o in monitoring if o["kind"] in CUSTOM_KINDS]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in added) == [
        ("PodMonitor", "flotilla"), ("PodMonitor", "flotilla-etcd"), ("PrometheusRule", "flotilla")]
    assert [o for o in monitoring if o["kind"] not in CUSTOM_KINDS] == list(base)


def test_each_custom_resource_has_the_operators_shape() -> None:
    for obj in render("monitoring"):
        if obj["kind"] in CUSTOM_KINDS:
            validate(obj)


@pytest.mark.parametrize("break_it", ["misspelt field", "bad interval", "rule without expr", "alert and record"])
def test_the_shape_check_refuses_a_broken_resource(break_it: str) -> None:
    objs = render("monitoring")
    monitor = copy.deepcopy(one(objs, "PodMonitor", "flotilla"))
    rule = copy.deepcopy(one(objs, "PrometheusRule", "flotilla"))
    first = rule["spec"]["groups"][0]["rules"][0]
    if break_it == "misspelt field":
        monitor["spec"]["podMetricEndpoints"] = monitor["spec"].pop("podMetricsEndpoints")
    elif break_it == "bad interval":
        monitor["spec"]["podMetricsEndpoints"][0]["interval"] = "30 seconds"
    elif break_it == "rule without expr":
        del first["expr"]
    else:
        first["alert"] = "Both"
    with pytest.raises(jsonschema.ValidationError):
        validate(monitor)
        validate(rule)


def scraped_by(objs: tuple[Obj, ...], workload: Obj) -> list[tuple[str, str]]:
    """(PodMonitor, port name) for each PodMonitor that selects the workload's pods."""
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return [(m["metadata"]["name"], e["port"]) for m in find(objs, "PodMonitor")
            if m["metadata"]["namespace"] == workload["metadata"]["namespace"]
            and selects(m["spec"]["selector"], labels) for e in m["spec"]["podMetricsEndpoints"]]


def test_every_service_and_etcd_is_scraped_once_on_a_port_prometheus_may_reach() -> None:
    objs = render("monitoring")
    workloads = {f"flotilla-{name}": one(objs, "Deployment", f"flotilla-{name}") for name in SERVICES}
    workloads["flotilla-etcd"] = one(objs, "StatefulSet", "flotilla-etcd")
    for name, workload in workloads.items():
        [(monitor, port_name)] = scraped_by(objs, workload)
        containers = workload["spec"]["template"]["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for c in containers for p in c.get("ports", [])}
        assert port_name in ports, f"{monitor} scrapes {name} on {port_name}, which its pods do not name"
        assert ingress_allowed(objs, workload, ports[port_name], PROMETHEUS), name
        assert not ingress_allowed(objs, workload, ports[port_name], UNLABELLED), name
        # The job label the PodMonitor takes from the pod is the workload's name.
        assert workload["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == name
    # Nothing else of the namespace is scraped (the etcd-auth Job's pod).
    job = one(objs, "Job", "flotilla-etcd-auth")
    assert scraped_by(objs, job) == []
