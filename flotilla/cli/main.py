"""flotillactl entry point: parse, dispatch, and turn every failure into one line."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

import grpc
from google.protobuf.message import DecodeError

from flotilla.api.codec import CodecError
from flotilla.api.errors import UserError, short
from flotilla.api.registry import UnknownResourceError
from flotilla.store import StoreError

# Each command's module in flotilla/cli/, by the commands it registers, in the order `--help`
# lists them. A module's `register(subparsers)` sets `run` on its parser. Only the module of the
# command given is imported (every one for `--help` or a command not known): a command loads its
# own libraries only, so `flotillactl get` does not load join's HTTP client, and starts sooner.
COMMANDS: dict[str, str] = {
    "get": "get", "describe": "describe", "apply": "apply", "delete": "delete", "taint": "taint",
    "join": "join", "unjoin": "join", "member": "member", "schedule": "schedule", "explain": "schedule",
    "whatif": "schedule", "status": "status", "trace": "trace", "secrets": "secrets", "auth": "auth",
    "certificate": "certificate",
}

# What a user's input or environment causes: their message is the whole line.
EXPECTED = (UserError, StoreError, CodecError, UnknownResourceError, ValueError, OSError, TimeoutError)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line too, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


class _NoCommand(Exception):
    pass


class _ScanParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _NoCommand(message)


def _global_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--etcd-endpoints", default=None,
                        help="etcd URLs (default: FLOTILLA_ETCD_ENDPOINTS, else the plane `flotilla up` "
                             "started last)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def command_of(argv: Sequence[str]) -> str | None:
    """The command `argv` names, read as the full parser reads its global options; None when it
    names none that is known (the full parser, with every command, then says what is wrong)."""
    scan = _ScanParser(add_help=False)
    _global_arguments(scan)
    scan.add_argument("command", nargs="?")
    try:
        command = scan.parse_known_args(argv)[0].command
    except _NoCommand:
        return None
    return command if command in COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with `command`'s module registered, or every module's."""
    parser = OneLineParser(prog="flotillactl", description="Use and inspect Flotilla.")
    _global_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    modules = [COMMANDS[command]] if command else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"flotilla.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_of(argv)).parse_args(argv)
    try:
        code: int = asyncio.run(args.run(args))
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.debug:
            raise
        print(f"error: {describe_failure(e)}", file=sys.stderr)
        return 1


def describe_failure(e: BaseException) -> str:
    """One line for any failure: the message of the errors users cause, a named one for the rest."""
    if isinstance(e, grpc.aio.AioRpcError):
        return f"{e.code().name.lower()}: {short(Exception(e.details() or ''))}"
    if isinstance(e, DecodeError):
        return f"a stored value cannot be decoded: {short(e)}"
    if isinstance(e, EXPECTED):
        return short(e)
    # A bug, not a mistake of the user's: still one line, and the way to see more.
    return f"{type(e).__name__}: {short(e)} (run with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
