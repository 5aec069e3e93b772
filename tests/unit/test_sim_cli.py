"""`python -m sim` options: cluster names, durations, --crds specs and files."""

from pathlib import Path

import pytest

from sim.cli import child_args, crd_documents, parse_args
from sim.shards import ShardedSim


def test_defaults_and_names(tmp_path: Path) -> None:
    args = parse_args(["--data-dir", str(tmp_path), "--clusters", "2", "--pod-ready-delay", "500ms"])
    assert args.cluster_names == ["member1", "member2"]
    assert args.pod_ready_delay == 0.5
    assert args.data_dir == str(tmp_path.resolve())
    named = parse_args(["--data-dir", "d", "--names", "east, west"])
    assert named.cluster_names == ["east", "west"]
    assert Path(named.data_dir).is_absolute()


def test_a_sharded_simulators_processes_share_its_options_and_split_its_clusters(tmp_path: Path) -> None:
    parent = parse_args(["--data-dir", str(tmp_path), "--clusters", "5", "--processes", "2",
                         "--pod-ready-delay", "1.5s", "--nodes", "2", "--node-pods", "300",
                         "--crds", "example.com/v1/Widget", "--loop", "asyncio"])
    child = parse_args([*child_args(parent), "--child", "1", "--names", "member2,member4", "--clusters", "0"])
    assert (child.child, child.cluster_names, child.port, child.etcd_endpoints) == (1, ["member2", "member4"], 0, None)
    for option in ("data_dir", "host", "pod_ready_delay", "nodes", "node_cpu", "node_memory", "node_pods", "crds",
                   "loop", "log_level"):
        assert getattr(child, option) == getattr(parent, option), option
    sharded = ShardedSim([], parent.cluster_names, 2, tmp_path)
    assert [c.names for c in sharded.children] == [["member1", "member3", "member5"], ["member2", "member4"]]
    assert list(sharded.owner) == parent.cluster_names  # listed in the order given
    with pytest.raises(SystemExit):
        parse_args(["--data-dir", "d", "--processes", "0"])


def test_crd_shorthands() -> None:
    flink, policy = crd_documents("flink.apache.org/v1beta1/FlinkDeployment,example.com/v1/Policy/policies:Cluster")
    assert flink["metadata"]["name"] == "flinkdeployments.flink.apache.org"
    assert (flink["spec"]["scope"], flink["spec"]["versions"][0]["name"]) == ("Namespaced", "v1beta1")
    assert (policy["metadata"]["name"], policy["spec"]["scope"]) == ("policies.example.com", "Cluster")
    assert crd_documents("") == []


def test_crd_files(tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                   "metadata: {name: widgets.example.com}\n---\n")
    assert [d["metadata"]["name"] for d in crd_documents(str(crd))] == ["widgets.example.com"]
    crd.write_text("apiVersion: v1\nkind: ConfigMap\n")
    with pytest.raises(ValueError, match="must be a CustomResourceDefinition"):
        crd_documents(str(crd))


@pytest.mark.parametrize("bad", ["just-a-kind", "g/v", "g/v/K/p/extra", "g/v/K:Sideways"])
def test_bad_crd_specs(bad: str) -> None:
    with pytest.raises(ValueError, match="group/version/Kind"):
        crd_documents(bad)
