"""`flotillactl schedule` text output and its one-line errors (in-process, no etcd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_runner import flotillactl

CASES = Path(__file__).resolve().parents[1] / "schedule_cases"
BASIC = str(CASES / "fleets" / "basic.yaml")


def test_text_output() -> None:
    code, out, _ = flotillactl("schedule", "-f", str(CASES / "cases" / "s12-seed-nginx-divided.yaml"),
                       "-f", BASIC)
    assert code == 0
    assert out.splitlines() == [
        "CLUSTER   REPLICAS",
        "member1   1",
        "member2   2",
        "",
        "FILTERED OUT   PLUGIN            REASON",
        "member3        ClusterAffinity   cluster(s) did not match the placement cluster affinity constraint",
        "member4        ClusterAffinity   cluster(s) did not match the placement cluster affinity constraint",
    ]


def test_text_output_of_a_non_workload() -> None:
    code, out, _ = flotillactl("schedule", "-f", str(CASES / "cases" / "k01-configmap-non-workload.yaml"),
                       "-f", BASIC)
    assert code == 0
    assert out.splitlines()[:3] == ["CLUSTER   REPLICAS", "member1   -", "member2   -"]


def test_text_output_when_nothing_fits() -> None:
    code, out, _ = flotillactl("schedule", "-f", str(CASES / "cases" / "a03-affinities-none-fits.yaml"),
                       "-f", BASIC)
    assert code == 0
    unfit = "0/4 clusters are available: 4 cluster(s) did not match the placement cluster affinity constraint."
    assert out.splitlines()[0] == (f'Not scheduled (NoClusterFit): clusterAffinities term "primary": {unfit}; '
                                   f'clusterAffinities term "backup": {unfit}')


BINDING = CASES / "cases" / "s13-seed-nginx-failover.yaml"
WORKLOAD = CASES / "cases" / "s12-seed-nginx-divided.yaml"


@pytest.mark.parametrize(("files", "message"), [
    ([BINDING, BINDING], "the file must hold one ResourceBinding, or one workload and its PropagationPolicy"),
    ([BINDING, WORKLOAD], "the file must hold one ResourceBinding, or one workload and its PropagationPolicy"),
    ([Path("/nonexistent.yaml")], "cannot read /nonexistent.yaml"),
])
def test_bad_input_is_one_line(files: list[Path], message: str) -> None:
    argv = [arg for f in files for arg in ("-f", str(f))]
    code, out, err = flotillactl("schedule", *argv, "-f", BASIC)
    assert code == 1 and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_a_policy_that_does_not_select_the_workload(tmp_path: Path) -> None:
    text = WORKLOAD.read_text().replace("      name: nginx\n", "      name: other\n")
    path = tmp_path / "other.yaml"
    path.write_text(text)
    code, _, err = flotillactl("schedule", "-f", str(path), "-f", BASIC)
    assert code == 1
    assert err == "error: PropagationPolicy nginx-propagation does not select Deployment default/nginx\n"


def test_other_kinds_do_not_belong_in_a_schedule_file(tmp_path: Path) -> None:
    path = tmp_path / "work.yaml"
    path.write_text("apiVersion: work.karmada.io/v1alpha1\nkind: Work\nmetadata: {name: w, namespace: karmada-es-m1}\n")
    code, _, err = flotillactl("schedule", "-f", str(path), "-f", BASIC)
    assert code == 1 and "only Clusters, a binding, or a workload and its policy" in err


def test_explain_takes_binding_kinds_only() -> None:
    code, _, err = flotillactl("explain", "deployment", "web")
    assert code == 1 and "explain takes rb (resourcebinding) or crb" in err
