"""`flotillactl taint clusters NAME KEY[=VALUE]:EFFECT[-]…`, as `kubectl taint nodes`.

The changed Cluster goes through admission (which stamps timeAdded on new
NoExecute taints) with its resourceVersion, so a concurrent change is never
overwritten: a conflict re-reads and tries again.
"""

from __future__ import annotations

import argparse
import json
import sys

from flotilla.api import codec, registry, taints
from flotilla.api.errors import UserError
from flotilla.api.v1 import cluster_pb2, webhook_pb2
from flotilla.cli.apply import violations_line
from flotilla.cli.connection import open_store
from flotilla.cli.webhook_client import WebhookClient, WebhookConflict
from flotilla.store import NotFound


def change_taints(cluster: cluster_pb2.Cluster, specs: list[str], overwrite: bool) -> str:
    """Edit the cluster's taints in place; returns "tainted" or "untainted"."""
    current = cluster.spec.taints
    added = False
    for spec in specs:
        taint, remove = taints.parse_taint_spec(spec)
        if remove:
            if not taints.remove_taint(current, taint.key, taint.effect):
                effect = f":{taint.effect}" if taint.effect else ""
                raise UserError(f'taint "{taint.key}{effect}" not found')
            continue
        existing = taints.find_taint(current, taint.key, taint.effect)
        if existing is not None:
            if not overwrite:
                raise UserError(
                    f"cluster {cluster.metadata.name} already has {taint.key} taint(s) with the same effect; "
                    "use --overwrite to change its value"
                )
            existing.value = taint.value
        else:
            taints.add_taint(current, taint)
        added = True
    return "tainted" if added else "untainted"


async def cmd_taint(args: argparse.Namespace) -> int:
    if registry.lookup(args.kind) is not registry.CLUSTER:
        raise UserError(f'taint works on clusters, not "{args.kind}"')
    if not args.taints:
        raise UserError("at least one taint (KEY[=VALUE]:EFFECT or KEY[:EFFECT]-) is required")
    async with open_store(args) as store:
        async with WebhookClient(store) as webhook:
            for _ in range(5):
                try:
                    cluster = await store.get(registry.CLUSTER, "", args.name)
                except NotFound as e:
                    raise UserError(f'clusters "{args.name}" not found') from e
                verb = change_taints(cluster, args.taints, args.overwrite)
                doc = codec.to_dict(cluster)
                doc.pop("status", None)
                request = webhook_pb2.AdmissionRequest(object_json=json.dumps(doc))
                try:
                    response = await webhook.call(lambda s: s.Apply, request)
                except WebhookConflict:
                    continue
                if not response.allowed:
                    print(violations_line(f"cluster/{args.name}", response), file=sys.stderr)
                    return 1
                print(f"cluster/{args.name} {verb}")
                return 0
    raise UserError(f"cluster/{args.name} kept changing; try again")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("taint", help="add or remove (KEY:EFFECT-) taints on a cluster")
    p.add_argument("kind", help="clusters")
    p.add_argument("name", help="cluster name")
    p.add_argument("taints", nargs="*", help="KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove")
    p.add_argument("--overwrite", action="store_true", help="change the value of an existing taint")
    p.set_defaults(run=cmd_taint)
