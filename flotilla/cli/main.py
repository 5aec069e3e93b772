"""flotillactl entry point: parse, dispatch, and turn every failure into one line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import NoReturn

import grpc
from google.protobuf.message import DecodeError

from flotilla.api.codec import CodecError
from flotilla.api.errors import UserError, short
from flotilla.api.registry import UnknownResourceError
from flotilla.cli import (
    apply,
    auth,
    certificate,
    delete,
    describe,
    get,
    join,
    member,
    schedule,
    secrets,
    status,
    taint,
    trace,
)
from flotilla.store import StoreError

# Each command module has `register(subparsers)`, which sets `run` on its parser.
COMMANDS = [get, describe, apply, delete, taint, join, member, schedule, status, trace, secrets, auth, certificate]

# What a user's input or environment causes: their message is the whole line.
EXPECTED = (UserError, StoreError, CodecError, UnknownResourceError, ValueError, OSError, TimeoutError)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line too, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="flotillactl", description="Use and inspect Flotilla.")
    parser.add_argument("--etcd-endpoints", default=None,
                        help="etcd URLs (default: FLOTILLA_ETCD_ENDPOINTS, else the plane `flotilla up` "
                             "started last)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
