"""flotillactl's dispatch: the command given is read before any command's module is imported, so a
command loads only its own module, and `--help` or a mistake still sees every command."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from flotilla.cli.main import COMMANDS, build_parser, command_of
from tests.cli_runner import flotillactl


@pytest.mark.parametrize(("argv", "command"), [
    (["get", "clusters"], "get"),
    (["--etcd-endpoints", "http://127.0.0.1:2379", "get", "rb", "-o", "json"], "get"),
    (["--etcd-endpoints=http://127.0.0.1:2379", "--debug", "unjoin", "member1"], "unjoin"),
    (["--debug", "member", "get", "deployments"], "member"),
    (["get", "--help"], "get"),
    # The value of a global option is not a command.
    (["--etcd-endpoints", "get"], None),
    ([], None),
    (["--help"], None),
    (["-h"], None),
    (["bogus", "clusters"], None),
    (["--no-such-flag", "get"], "get"),
])
def test_the_command_is_read_as_the_full_parser_reads_it(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


def test_without_a_command_every_command_is_registered_in_order() -> None:
    assert subcommands(build_parser()) == list(COMMANDS)


def test_a_command_registers_its_own_module_only() -> None:
    assert subcommands(build_parser("explain")) == ["schedule", "explain", "whatif"]
    assert subcommands(build_parser("get")) == ["get"]


def test_get_loads_neither_joins_http_client_nor_other_commands() -> None:
    probe = ("import sys; from flotilla.cli.main import build_parser, command_of; "
             "build_parser(command_of(['get', 'clusters'])); "
             "print(sorted(m for m in sys.modules if m == 'aiohttp' or m.startswith('flotilla.cli.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "aiohttp" not in loaded.stdout
    assert "flotilla.cli.join" not in loaded.stdout
    assert "flotilla.cli.get" in loaded.stdout


def test_mistakes_are_still_one_line_naming_every_command() -> None:
    code, _, err = flotillactl("bogus")
    assert code == 2
    assert err.count("\n") == 1 and "invalid choice: 'bogus'" in err and "'certificate'" in err
    code, _, err = flotillactl("get")
    assert code == 2 and "required: KIND" in err and "flotillactl get --help" in err


def test_status_loads_its_http_client_before_any_health_check_is_timed() -> None:
    """`flotillactl status` checks every instance at once, each within its deadline: importing the
    simulator's HTTP client inside those checks (a second or more on a loaded machine) took that
    time from the others' deadlines, and they read UNREACHABLE."""
    probe = ("import sys; from flotilla.cli.main import build_parser; build_parser('status'); "
             "print('aiohttp' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "True"
