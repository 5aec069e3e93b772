"""flotillactl entry point: parse, dispatch, and turn every failure into one line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from flotilla.store import StoreError
from flotilla.store.connect import make_client, resolve_endpoints


class CLIError(Exception):
    pass


async def cmd_status(args: argparse.Namespace) -> int:
    from flotilla.cli.status import collect, render

    endpoints = resolve_endpoints(args.etcd_endpoints)
    client = make_client(endpoints, timeout=3)
    try:
        await client.connect()
        statuses = await collect(client)
    except Exception as e:  # aetcd raises several unrelated types for "not there"
        raise CLIError(f"cannot reach etcd at {endpoints}: {_short(e)}") from e
    finally:
        await client.close()
    if not statuses:
        print(f"No services registered in etcd at {endpoints}.")
        return 0
    print(render(statuses))
    return 0 if all(s.health == "SERVING" for s in statuses) else 1


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flotillactl", description="Use and inspect Flotilla.")
    parser.add_argument("--etcd-endpoints", default=None,
                        help="etcd URLs (default: FLOTILLA_ETCD_ENDPOINTS, else http://127.0.0.1:2379)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="each service: replicas, leader, health, address")
    p.set_defaults(run=cmd_status)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(args.run(args))
    except (CLIError, StoreError, ValueError) as e:
        if args.debug:
            raise
        print(f"error: {_short(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
