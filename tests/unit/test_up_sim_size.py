"""`flotilla up --sim-nodes N --sim-node-pods M` sizes the simulated members (3 x 110 pods capped a
member at 330 replicas); the failover benchmark's CPU per evicted binding, per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from flotilla.plane.benchmarks.failover import cpu_ms_per_binding
from flotilla.plane.command import build_parser
from flotilla.plane.local_plane import LocalControlPlane


def test_the_simulated_members_are_sized_by_flags() -> None:
    args = build_parser().parse_args(["up", "--sim-clusters", "2", "--sim-nodes", "20", "--sim-node-pods", "500"])
    assert (args.sim_nodes, args.sim_node_pods) == (20, 500)
    defaults = build_parser().parse_args(["up"])
    assert (defaults.sim_nodes, defaults.sim_node_pods) == (3, 110)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--sim-nodes", "0"])


def test_the_plane_passes_the_size_to_the_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plane = LocalControlPlane(tmp_path, "http://127.0.0.1:1", None, detach=False, sim_clusters=2, sim_nodes=20,
                              sim_node_pods=500, insecure=True)
    spawned: dict[str, tuple[str, ...]] = {}
    monkeypatch.setattr(plane, "_spawn", lambda name, *args, **_: spawned.__setitem__(name, args))
    monkeypatch.setattr(plane, "_secure", lambda: None)
    monkeypatch.setattr(plane, "_seal_stored", lambda: None)
    plane.start()
    sim = spawned["sim"]
    assert sim[sim.index("--nodes") + 1] == "20" and sim[sim.index("--node-pods") + 1] == "500"


def test_cpu_per_evicted_binding() -> None:
    report = {"executor": {"cpu_s": 2.5, "peak_rss_mib": 90.0}, "sim": {"cpu_s": float("nan"), "peak_rss_mib": 1.0}}
    assert cpu_ms_per_binding(report, 100) == {"executor": 25.0, "sim": None}
    assert cpu_ms_per_binding(report, 0) == {"executor": None, "sim": None}
