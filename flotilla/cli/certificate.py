"""`flotillactl certificate issue NAME [--group G]… [--days N]`: a client certificate of the
plane's CA for a person or a CI job. Its common name is the user and each group an organization,
as Kubernetes' x509 authenticator reads them; RBAC bindings then say what it may do.

The CA is the current context's (`<data-dir>/pki`, where `flotilla up` keeps it), or the one
given with `--ca-cert` and `--ca-key` (a plane deployed with deploy/k8s): whoever runs this
holds the CA's key, which is what lets them issue identities at all."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

from flotilla.api.errors import UserError
from flotilla.cli.connection import API_ADDRESS_ENV
from flotilla.security import tls
from flotilla.security.context import current_context
from flotilla.security.tls import ENV_CA, ENV_CERT, ENV_KEY

_FORBIDDEN_CHARACTERS = set(",/\\=+<>#;\"'\n\r\t")


def checked_name(value: str, what: str) -> str:
    if not value or value != value.strip() or _FORBIDDEN_CHARACTERS & set(value) or len(value) > 64:
        raise UserError(f"{what} {value!r}: give 1 to 64 characters, without spaces at either end or any of "
                        f"{''.join(sorted(_FORBIDDEN_CHARACTERS - {chr(10), chr(13), chr(9)}))}")
    return value


def ca_files(args: argparse.Namespace) -> tuple[Path, Path]:
    if bool(args.ca_cert) != bool(args.ca_key):
        raise UserError("--ca-cert and --ca-key go together")
    if args.ca_cert:
        return Path(args.ca_cert), Path(args.ca_key)
    context = current_context()
    if context is None:
        raise UserError("no plane to issue for: run `flotilla up`, or give --ca-cert and --ca-key")
    pki = Path(context.data_dir) / "pki"
    return pki / "ca.crt", pki / "ca.key"


async def cmd_issue(args: argparse.Namespace) -> int:
    name = checked_name(args.name, "name")
    groups = [checked_name(g, "group") for g in args.groups]
    if args.days < 1:
        raise UserError(f"--days {args.days}: must be at least 1")
    ca_cert, ca_key = ca_files(args)
    for path in (ca_cert, ca_key):
        if not path.is_file():
            raise UserError(f"{path} does not exist (the CA that signs the plane's certificates)")
    out = Path(args.out)
    if (out / f"{name}.crt").exists() or (out / f"{name}.key").exists():
        raise UserError(f"{out / name}.crt or .key exists already; choose another --out or remove them")
    try:
        authority = tls.Authority(out, "flotilla-ca", ca_cert, ca_key)
        files = authority.issue(name, name, [], server=False, client=True, groups=groups,
                                lifetime=timedelta(days=args.days))
    except (tls.TLSError, ValueError) as e:
        raise UserError(f"cannot issue with the CA {ca_cert}: {e}") from e
    print(f"certificate {files.cert} (user {name!r}, groups {groups or 'none'}, {args.days} days)")
    context = current_context()
    api = f" {API_ADDRESS_ENV}={context.api_address}" if context is not None and context.api_address else ""
    print(f"use it with: export {ENV_CA}={files.ca} {ENV_CERT}={files.cert} {ENV_KEY}={files.key}{api}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("certificate", help="client certificates of the plane's CA")
    actions = p.add_subparsers(dest="action", required=True)
    issue = actions.add_parser("issue", help="issue a client certificate for a user (CN) in groups (O)")
    issue.add_argument("name", help="the user name RBAC subjects name (kind: User)")
    issue.add_argument("--group", dest="groups", action="append", default=[], metavar="GROUP",
                       help="a group it belongs to (repeatable), for Group subjects")
    issue.add_argument("--days", type=int, default=365, help="how long it is valid (default %(default)s)")
    issue.add_argument("--out", default=".", help="where NAME.crt and NAME.key are written (default: here)")
    issue.add_argument("--ca-cert", default=None, help="the CA certificate (default: the current plane's)")
    issue.add_argument("--ca-key", default=None, help="the CA key")
    issue.set_defaults(run=cmd_issue)
