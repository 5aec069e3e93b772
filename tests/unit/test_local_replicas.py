"""`flotilla up --replicas N --etcd-members N`: what each starts, and the flags a plane cannot use,
refused in one line before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from flotilla.plane.command import build_parser, main
from flotilla.plane.local_plane import LocalControlPlane
from flotilla.store.embedded import EtcdCluster


def test_each_service_runs_as_many_replicas_as_asked(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up", "--replicas", "3", "--etcd-members", "3"])
    assert (args.replicas, args.etcd_members) == (3, 3)
    plane = LocalControlPlane(tmp_path, None, None, detach=True, replicas=3)
    assert plane.instances("scheduler") == ["scheduler-1", "scheduler-2", "scheduler-3"]
    # One replica keeps the names (and log files) a plane always had.
    assert LocalControlPlane(tmp_path, None, None, detach=True).instances("scheduler") == ["scheduler"]


def test_an_etcd_cluster_gives_each_member_its_ports_and_data_dir(tmp_path: Path) -> None:
    cluster = EtcdCluster(tmp_path, 3, client_port=12379)
    first, *rest = cluster.members
    assert first.client_port == 12379
    assert len({m.data_dir for m in cluster.members}) == 3
    assert len({m.client_port for m in cluster.members} | {m.peer_port for m in cluster.members}) == 6
    assert all(m.initial_cluster == first.initial_cluster for m in rest)
    assert first.initial_cluster.count("=http://127.0.0.1:") == 3
    assert cluster.endpoint == ",".join(m.endpoint for m in cluster.members)
    # One member stays where a plane's etcd always was.
    assert EtcdCluster(tmp_path, 1).members[0].data_dir == tmp_path


@pytest.mark.parametrize(("argv", "message"), [
    (["--replicas", "0"], "argument --replicas: '0': must be at least 1"),
    (["--etcd-members", "two"], "argument --etcd-members: 'two' is not a whole number"),
])
def test_a_bad_count_is_refused_by_name(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["up", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--etcd-endpoints", "http://127.0.0.1:2379", "--etcd-members", "3"], "--etcd-members: only for the embedded"),
    (["--etcd-endpoints", "http://a.example:2379,http://b.example:2379"], "must all be IPv4 or all IPv6"),
])
def test_etcd_flags_that_cannot_work_are_refused_before_anything_starts(
        argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["up", "--data-dir", str(tmp_path / "plane"), *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "plane").exists()
