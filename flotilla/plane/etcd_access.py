"""`flotilla etcd-auth`: turn etcd's authentication on for a plane that `flotilla up` did not
start (deploy/k8s): each service's certificate its own etcd user with its service's role
(flotilla.security.etcd_roles), the administrators root. Run once at bootstrap, and again after
an upgrade (it reconciles the roles to this version's table), with an administrator's
certificate (FLOTILLA_ETCD_* or the current context)."""

from __future__ import annotations

import argparse
import asyncio

from flotilla.api.errors import UserError
from flotilla.security.context import resolve_endpoints
from flotilla.security.etcd_roles import SERVICES
from flotilla.store import etcd_auth
from flotilla.store.connect import make_client

# The common names docs/deploy.md gives the services' certificates, and their roles.
DEPLOYED = {"webhook": "webhook", "status": "status", "taint-manager": "taint_manager", "scheduler": "scheduler",
            "eviction": "eviction", "executor": "executor"}


def user_role(text: str) -> tuple[str, str]:
    user, sep, role = text.partition("=")
    if not sep or not user or not role:
        raise argparse.ArgumentTypeError(f"--user {text!r}: give CN=ROLE, e.g. taint-manager=taint_manager")
    if role not in SERVICES:
        raise argparse.ArgumentTypeError(f"--user {text!r}: role must be one of {', '.join(SERVICES)} "
                                         "(Pull agents have no etcd user: they call the plane's API)")
    return user, role


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--etcd-endpoints", default=None,
                        help="etcd URLs (default: FLOTILLA_ETCD_ENDPOINTS, else the current context)")
    parser.add_argument("--user", dest="users", type=user_role, action="append", default=[], metavar="CN=ROLE",
                        help="a certificate's common name and its service's role (repeatable; default: the "
                             "services of deploy/k8s, " + ", ".join(f"{u}={r}" for u, r in DEPLOYED.items()) + ")")
    parser.add_argument("--admin", dest="admins", action="append", default=[], metavar="CN",
                        help="a common name given etcd's root role (repeatable; default: admin)")


def run(args: argparse.Namespace) -> int:
    users = dict(args.users) or DEPLOYED
    admins = args.admins or ["admin"]
    endpoints = resolve_endpoints(args.etcd_endpoints)

    async def enable() -> None:
        client = make_client(endpoints, timeout=10)
        try:
            await client.connect()
            await etcd_auth.enable(client, users, admins)
        except Exception as e:  # aetcd and grpc raise several unrelated types
            raise UserError(f"cannot turn etcd auth on at {endpoints}: {e} (call as an administrator: "
                            "a certificate whose common name is root or one of --admin)") from e
        finally:
            await client.close()

    asyncio.run(enable())
    for user, role in sorted(users.items()):
        print(f"etcd user {user}: role {role}")
    print(f"etcd root: {', '.join(admins)}; auth is on")
    return 0
