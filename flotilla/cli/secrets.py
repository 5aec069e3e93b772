"""`flotillactl secrets rewrite`: after a new key is put first in the encryption key file (and
every service restarted with it), re-encrypt every stored Secret with it, so the old key can
be dropped; as Kubernetes' rotation rewrites every Secret (flotilla.security.crypto)."""

from __future__ import annotations

import argparse

from flotilla.cli.connection import open_etcd


async def cmd_rewrite(args: argparse.Namespace) -> int:
    async with open_etcd(args) as store:
        rewritten, total = await store.rewrite_secrets()
        key = store.keys.current if store.keys else ""
    print(f"{rewritten} of {total} secrets re-encrypted with key {key}"
          + ("" if rewritten else " (all were already)"))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("secrets", help="encryption at rest of Secrets")
    actions = p.add_subparsers(dest="action", required=True)
    rewrite = actions.add_parser("rewrite", help="re-encrypt every Secret with the first key of the key file")
    rewrite.set_defaults(run=cmd_rewrite)
