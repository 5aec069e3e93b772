"""nodeSummary and resourceSummary as Karmada's cluster status controller computes them."""

from typing import Any

from flotilla.member import node_summary, resource_summary
from flotilla.member.summary import summarized_node, summarized_pod


def node(name: str, ready: str = "True", **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": ready}]}}


def pod(node_name: str = "", phase: str = "Running", init: dict[str, str] | None = None,
        overhead: dict[str, str] | None = None, **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": init}}]
    if overhead:
        spec["overhead"] = overhead
    return {"spec": spec, "status": {"phase": phase}}


def test_node_summary_counts_ready_nodes() -> None:
    nodes = [node("a"), node("b", ready="False"), node("c", ready="Unknown"), {"metadata": {"name": "d"}}]
    assert node_summary(nodes) == {"totalNum": 4, "readyNum": 1}
    assert node_summary([]) == {"totalNum": 0, "readyNum": 0}


def test_allocatable_sums_nodes_in_the_first_nodes_format() -> None:
    nodes = [node("a", cpu="8", memory="32Gi", pods="110"), node("b", cpu="7500m", memory="32Gi", pods="110")]
    assert resource_summary(nodes, [])["allocatable"] == {"cpu": "15500m", "memory": "64Gi", "pods": "220"}


def test_allocated_counts_bound_unfinished_pods_and_allocating_the_unbound() -> None:
    nodes = [node("a", cpu="8", memory="32Gi", pods="110")]
    pods = [
        pod("a", cpu="500m", memory="256Mi"),
        pod("a", cpu="1", memory="1Gi"),
        pod("a", phase="Succeeded", cpu="4"),
        pod("a", phase="Failed", cpu="4"),
        pod("", phase="Pending", cpu="2", memory="1Gi"),
    ]
    summary = resource_summary(nodes, pods)
    assert summary["allocated"] == {"cpu": "1500m", "memory": "1280Mi", "pods": "2"}
    assert summary["allocating"] == {"cpu": "2", "memory": "1Gi", "pods": "1"}


def test_zero_amounts_are_left_out() -> None:
    summary = resource_summary([], [pod("a")])
    assert summary["allocated"] == {"pods": "1"}
    assert summary["allocating"] == {}
    assert summary["allocatable"] == {}


def test_init_containers_raise_and_overhead_adds_to_the_request() -> None:
    summary = resource_summary([], [pod("a", init={"cpu": "3"}, overhead={"cpu": "100m"}, cpu="1")])
    assert summary["allocated"]["cpu"] == "3100m"


def test_extended_resources_count_and_unknown_names_do_not() -> None:
    summary = resource_summary([], [pod("a", **{"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "foo": "1"})])
    assert summary["allocated"] == {"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "pods": "1"}


def test_the_summarized_forms_keep_every_summary() -> None:
    nodes = [node("a", cpu="8", memory="32Gi", pods="110"), node("b", ready="False", cpu="7500m"),
             {"metadata": {"name": "c"}}]
    nodes[0]["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})
    pods = [pod("a", cpu="500m", memory="256Mi"), pod(cpu="1"), pod("a", phase="Succeeded", cpu="2"),
            pod("a", init={"cpu": "3"}, overhead={"cpu": "100m"}, cpu="1"), {"metadata": {"name": "bare"}}]
    slim_nodes, slim_pods = [summarized_node(n) for n in nodes], [summarized_pod(p) for p in pods]
    assert node_summary(slim_nodes) == node_summary(nodes)
    assert resource_summary(slim_nodes, slim_pods) == resource_summary(nodes, pods)
    assert slim_nodes[0] == {"status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                        "conditions": [{"type": "Ready", "status": "True"}]}}


def test_a_members_repeated_requests_are_parsed_once() -> None:
    """Every collection sums every pod of the member afresh; a request amount is parsed the first
    time it is seen, not at every pod of every collection."""
    from flotilla.member.summary import _parsed

    pods = [pod("a", cpu="123m", memory="77Mi") for _ in range(50)]
    before = _parsed.cache_info().misses
    for _ in range(3):
        assert resource_summary([node("a", cpu="4")], pods)["allocated"] == {
            "cpu": "6150m", "memory": "3850Mi", "pods": "50"}
    assert _parsed.cache_info().misses - before == 2
