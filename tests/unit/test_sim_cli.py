"""`python -m sim` options: cluster names, durations, --crds specs and files."""

from pathlib import Path

import pytest

from sim.cli import crd_documents, parse_args


def test_defaults_and_names(tmp_path: Path) -> None:
    args = parse_args(["--data-dir", str(tmp_path), "--clusters", "2", "--pod-ready-delay", "500ms"])
    assert args.cluster_names == ["member1", "member2"]
    assert args.pod_ready_delay == 0.5
    assert args.data_dir == str(tmp_path.resolve())
    named = parse_args(["--data-dir", "d", "--names", "east, west"])
    assert named.cluster_names == ["east", "west"]
    assert Path(named.data_dir).is_absolute()


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
