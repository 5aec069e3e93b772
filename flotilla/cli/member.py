"""`flotillactl member get KIND [-n NS|-A] [--clusters a,b] [-o json]`: objects as they are
in the member clusters, with a CLUSTER column, as `karmadactl get` shows them.

An unreachable member is one error line on stderr; the others still print.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from flotilla.api import codec, registry
from flotilla.api.errors import UserError, short
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2, meta_pb2
from flotilla.cli import printers
from flotilla.cli.connection import open_store
from flotilla.cli.get import resolve_kind
from flotilla.cli.reads import list_objects, undecodable_line
from flotilla.cli.table import table
from flotilla.member import MemberClient
from flotilla.rules.cluster_secrets import load_credentials
from flotilla.store.base import StoreBase

DEFAULT_NAMESPACE = "default"


def as_unstructured(obj: dict[str, Any]) -> meta_pb2.Unstructured:
    """A member's object in the shape the printers take (metadata fields kubectl shows only)."""
    meta = obj.get("metadata") or {}
    out = meta_pb2.Unstructured(api_version=obj.get("apiVersion", ""), kind=obj.get("kind", ""))
    out.metadata.name = meta.get("name", "")
    out.metadata.namespace = meta.get("namespace", "")
    out.metadata.labels.update(meta.get("labels") or {})
    if meta.get("creationTimestamp"):
        out.metadata.creation_timestamp.CopyFrom(codec.parse_time(meta["creationTimestamp"]))
    out.content = codec.raw_json({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")})
    return out


def render_member_table(rt: ResourceType[Any], rows: list[tuple[str, dict[str, Any]]], now: datetime,
                        all_namespaces: bool) -> str:
    columns = printers.columns_for(rt)
    headers = [columns[0].header, "CLUSTER", *(c.header for c in columns[1:] if not c.wide)]
    body = []
    for cluster, obj in rows:
        shown = as_unstructured(obj)
        cells = [c.cell(shown, now) for c in columns if not c.wide]
        body.append([cells[0], cluster, *cells[1:]])
    if all_namespaces and rt.namespaced:
        headers = ["NAMESPACE", *headers]
        body = [[obj.get("metadata", {}).get("namespace", ""), *row] for (_, obj), row in zip(rows, body, strict=True)]
    return table(headers, body)


async def _list_in(store: StoreBase, cluster: cluster_pb2.Cluster, rt: ResourceType[Any],
                   namespace: str | None) -> list[dict[str, Any]]:
    client = MemberClient(await load_credentials(store, cluster), timeout=5)
    try:
        return await client.list(rt.api_version, rt.kind, namespace)
    finally:
        await client.close()


async def cmd_member_get(args: argparse.Namespace) -> int:
    wanted = [c for c in (args.clusters or "").split(",") if c]
    async with open_store(args) as store:
        rt = await resolve_kind(store, args.kind)
        listed = await list_objects(store, registry.CLUSTER)
        for key in listed.undecodable:
            print(undecodable_line(registry.CLUSTER, key), file=sys.stderr)
        clusters = sorted(listed.items, key=lambda c: c.metadata.name)
        unknown = set(wanted) - {c.metadata.name for c in clusters}
        if unknown:
            raise UserError(f"unknown cluster(s): {', '.join(sorted(unknown))}")
        if wanted:
            clusters = [c for c in clusters if c.metadata.name in wanted]
        namespace = None if args.all_namespaces or not rt.namespaced else (args.namespace or DEFAULT_NAMESPACE)
        results = await asyncio.gather(*(_list_in(store, c, rt, namespace) for c in clusters),
                                       return_exceptions=True)
    rows: list[tuple[str, dict[str, Any]]] = []
    failed = 0
    for cluster, result in zip(clusters, results, strict=True):
        if isinstance(result, BaseException):
            failed += 1
            print(f"error: cluster {cluster.metadata.name}: {short(result)}", file=sys.stderr)
            continue
        rows.extend((cluster.metadata.name, obj) for obj in result)
    if args.output == "json":
        print(json.dumps({"items": [{**obj, "cluster": c} for c, obj in rows]}, indent=4))
    elif rows:
        text = render_member_table(rt, rows, datetime.now(UTC), bool(args.all_namespaces))
        print(text.partition("\n")[2] if args.no_headers else text)
    elif not failed:
        print(printers.no_resources(namespace), file=sys.stderr)
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("member", help="look into the member clusters")
    member_sub = p.add_subparsers(dest="member_command", required=True, parser_class=type(p))
    g = member_sub.add_parser("get", help="objects as they are in each member cluster")
    g.add_argument("kind", metavar="KIND")
    g.add_argument("-n", "--namespace", default=None)
    g.add_argument("-A", "--all-namespaces", action="store_true")
    g.add_argument("--clusters", default="", help="only these clusters: a,b")
    g.add_argument("-o", "--output", choices=["json"], default=None)
    g.add_argument("--no-headers", action="store_true", help="the table without its header line")
    g.set_defaults(run=cmd_member_get)
