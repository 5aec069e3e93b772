"""`flotillactl delete -f FILE` / `delete KIND NAME [-n NS]` (finalizers are honoured)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flotilla.api import registry
from flotilla.api.errors import UserError
from flotilla.api.v1 import webhook_pb2
from flotilla.cli.connection import open_store
from flotilla.cli.documents import display_name, read_documents
from flotilla.cli.webhook_client import WebhookClient


def _targets(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.filename:
        if args.kind or args.names:
            raise UserError("give either -f FILE or KIND NAME, not both")
        return read_documents(args.filename)
    if not args.kind or not args.names:
        raise UserError("delete needs -f FILE or KIND NAME")
    rt = registry.lookup(args.kind)
    return [
        {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": n, "namespace": args.namespace}}
        for n in args.names
    ]


async def cmd_delete(args: argparse.Namespace) -> int:
    targets = _targets(args)
    failed = 0
    async with open_store(args) as store:
        async with WebhookClient(store) as webhook:
            for doc in targets:
                meta = doc.get("metadata") or {}
                request = webhook_pb2.DeleteRequest(
                    api_version=str(doc.get("apiVersion", "")), kind=str(doc.get("kind", "")),
                    namespace=str(meta.get("namespace") or args.namespace or ""), name=str(meta.get("name", "")),
                )
                try:
                    response = await webhook.call(lambda s: s.Delete, request)
                except UserError as e:
                    failed += 1
                    print(f"error: {display_name(doc)}: {e}", file=sys.stderr)
                    continue
                suffix = "deleted" if response.result == "deleted" else "marked for deletion (finalizers pending)"
                print(f"{display_name(doc)} {suffix}")
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("delete", help="delete objects named in a file, or by kind and name")
    p.add_argument("kind", nargs="?", help="resource kind, plural or short name (pp, cpp, rb, crb)")
    p.add_argument("names", nargs="*", help="object names")
    p.add_argument("-f", "--filename", action="append", help="file with YAML documents, or -")
    p.add_argument("-n", "--namespace", default="", help="namespace (default: default)")
    p.set_defaults(run=cmd_delete)
