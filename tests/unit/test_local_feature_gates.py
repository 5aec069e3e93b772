"""`flotilla up --feature-gates`: passed to every service as `FLOTILLA_FEATURE_GATES`, next to
the profile's timings; each service with a `--feature-gates` flag reads the gates it knows."""

from __future__ import annotations

import argparse

import pytest

from flotilla.plane.command import build_parser
from flotilla.plane.local_plane import service_env
from flotilla.plane.profiles import PROFILES
from flotilla.runtime.flags import apply_env_defaults, feature_gates


def test_up_passes_the_gates_with_the_profile() -> None:
    args = build_parser().parse_args(["up", "--profile", "demo", "--feature-gates",
                                      "StatefulFailoverInjection=true,PropagateDeps=false"])
    env = service_env(args.profile, args.feature_gates)
    assert env == {**PROFILES["demo"], "FLOTILLA_FEATURE_GATES": "StatefulFailoverInjection=true,PropagateDeps=false"}
    # As a service reads it.
    service = argparse.ArgumentParser()
    service.add_argument("--feature-gates", type=feature_gates, default={})
    apply_env_defaults(service, env)
    assert service.parse_args([]).feature_gates == {"StatefulFailoverInjection": True, "PropagateDeps": False}


def test_no_gates_leave_the_services_their_defaults() -> None:
    args = build_parser().parse_args(["up"])
    assert "FLOTILLA_FEATURE_GATES" not in service_env(args.profile, args.feature_gates)


def test_a_malformed_gate_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["up", "--feature-gates", "StatefulFailoverInjection"])
    assert exited.value.code == 2
    assert "invalid feature gate" in capsys.readouterr().err
