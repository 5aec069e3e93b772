from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

import services.scheduler.__main__ as scheduler_main
import services.status.__main__ as status_main
from flotilla.runtime.flags import apply_env_defaults, duration, env_name, feature_gates, options_from
from services.scheduler.reconciler import SchedulerOptions
from services.status.controllers import StatusOptions


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("0", 0), ("1.5s", 1.5)],
)
def test_duration(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "5x", "s10", "1m1"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_feature_gates() -> None:
    gates = feature_gates("Failover=true, GracefulEviction=false")
    assert gates == {"Failover": True, "GracefulEviction": False}
    with pytest.raises(argparse.ArgumentTypeError):
        feature_gates("Failover")


def test_environment_fills_defaults_and_flags_win() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster-failure-threshold", type=duration, default=duration("30s"))
    parser.add_argument("--etcd-endpoints", required=True)
    parser.add_argument("--leader-elect", action="store_true")
    env = {
        env_name("--cluster-failure-threshold"): "3s",
        "FLOTILLA_ETCD_ENDPOINTS": "http://e:1",
        "FLOTILLA_LEADER_ELECT": "true",
    }
    assert env_name("--cluster-failure-threshold") == "FLOTILLA_CLUSTER_FAILURE_THRESHOLD"
    apply_env_defaults(parser, env)
    args = parser.parse_args([])
    assert args.cluster_failure_threshold == 3.0
    assert (args.etcd_endpoints, args.leader_elect) == ("http://e:1", True)
    assert parser.parse_args(["--cluster-failure-threshold", "1m"]).cluster_failure_threshold == 60


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), ("0", False), ("yes", True)])
def test_environment_sets_boolean_optional_flags(value: str, expected: bool) -> None:
    """`--leader-elect/--no-leader-elect` from FLOTILLA_LEADER_ELECT is a bool, not the string
    (the Deployments in deploy/k8s set it this way)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--leader-elect", default=not expected, action=argparse.BooleanOptionalAction)
    apply_env_defaults(parser, {"FLOTILLA_LEADER_ELECT": value})
    assert parser.parse_args([]).leader_elect is expected
    assert parser.parse_args(["--no-leader-elect"]).leader_elect is False


@pytest.mark.parametrize("add_arguments, options", [
    (scheduler_main.add_arguments, SchedulerOptions),
    (status_main.add_arguments, StatusOptions),
])
def test_options_from_reads_each_field_from_its_own_flag(add_arguments: Any, options: Any) -> None:
    # Every flag() names a flag the service's parser defines, and its value (not the
    # dataclass default) is what the options carry.
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([])
    declared = {f.name: f.metadata["flag"] for f in dataclasses.fields(options) if "flag" in f.metadata}
    assert declared
    for name, flag_name in declared.items():
        dest = flag_name.lstrip("-").replace("-", "_")
        setattr(args, dest, ("sentinel", name))
    built = options_from(options, args)
    for name in declared:
        assert getattr(built, name) == ("sentinel", name)


@pytest.mark.parametrize(("environ", "message"), [
    ({"FLOTILLA_EVENT_LOOP": "trio"}, "FLOTILLA_EVENT_LOOP='trio': not one of uvloop, asyncio"),
    ({"FLOTILLA_PERIOD": "soon"}, "FLOTILLA_PERIOD='soon': "),
])
def test_a_bad_value_in_the_environment_is_refused_as_a_bad_flag_would_be(
        environ: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="svc")
    parser.add_argument("--event-loop", default="uvloop", choices=["uvloop", "asyncio"])
    parser.add_argument("--period", type=duration, default=duration("1s"))
    with pytest.raises(SystemExit) as exited:
        apply_env_defaults(parser, environ)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
