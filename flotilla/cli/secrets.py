"""`flotillactl secrets rewrite`: re-encrypt every stored Secret and Work with the first key of the
encryption key file (flotilla.security.crypto), as Kubernetes' rotation rewrites every Secret.

Run it after a new key is put first in the key file (and every service restarted with it), so the
old key can be dropped; and after encryption is turned on over a plane that stored plaintext,
which the plane refuses to read (fail closed) until this has encrypted it (meanwhile processes
that must read it run with --accept-plaintext-secrets). It goes to etcd itself, since it needs the
key and reads plaintext on purpose."""

from __future__ import annotations

import argparse

from flotilla.cli.connection import open_etcd


async def cmd_rewrite(args: argparse.Namespace) -> int:
    async with open_etcd(args) as store:
        rewritten, total = await store.rewrite_secrets()
        key = store.keys.current if store.keys else ""
    print(f"{rewritten} of {total} secrets and works re-encrypted with key {key}"
          + ("" if rewritten else " (all were already)"))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("secrets", help="encryption at rest of Secrets (and of Works, which carry them)")
    actions = p.add_subparsers(dest="action", required=True)
    rewrite = actions.add_parser("rewrite", help="re-encrypt every Secret and Work with the first key of the key file")
    rewrite.set_defaults(run=cmd_rewrite)
