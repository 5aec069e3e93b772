"""`flotillactl auth can-i VERB RESOURCE[/NAME]`, as `kubectl auth can-i`: asks the plane
(the webhook's ReviewAccess, a SubjectAccessReview) whether you (or, with `--as`, another user)
may do something; prints yes or no and exits 0 or 1."""

from __future__ import annotations

import argparse
import sys

from flotilla.api import registry
from flotilla.api.errors import UserError
from flotilla.api.v1 import webhook_pb2
from flotilla.cli.connection import open_store
from flotilla.cli.webhook_client import WebhookClient


def resource_of(text: str) -> tuple[str, str, bool]:
    """(API group, resource, namespaced) for a name as kubectl takes it: a kind's plural,
    singular or short name (`deployments`, `deploy`, `pp`), `<plural>.<group>`, or `*`."""
    if text == "*":
        return "*", "*", True
    try:
        rt = registry.lookup(text)
    except registry.UnknownResourceError:
        plural, _, group = text.partition(".")
        print(f"Warning: the server doesn't have a resource type '{plural}'", file=sys.stderr)
        return group, plural, True
    return rt.group, rt.plural, rt.namespaced


async def cmd_can_i(args: argparse.Namespace) -> int:
    if args.as_groups and not args.as_user:
        raise UserError("--as-group needs --as")
    what, _, name = args.resource.partition("/")
    group, resource, namespaced = resource_of(what)
    namespace = "" if args.all_namespaces or not namespaced else args.namespace
    request = webhook_pb2.AccessReviewRequest(verb=args.verb, api_group=group, resource=resource,
                                              subresource=args.subresource, namespace=namespace, name=name,
                                              user=args.as_user or "", groups=args.as_groups)
    async with open_store(args) as store:
        async with WebhookClient(store) as webhook:
            answer = await webhook.call(lambda s: s.ReviewAccess, request)
    if not args.quiet:
        print("yes" if answer.allowed else "no")
    return 0 if answer.allowed else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("auth", help="inspect authorization")
    actions = p.add_subparsers(dest="action", required=True)
    can_i = actions.add_parser("can-i", help="whether an action is allowed (exit 0: yes, 1: no)")
    can_i.add_argument("verb", help="get, list, watch, create, update, patch, delete, … or *")
    can_i.add_argument("resource", metavar="RESOURCE[/NAME]",
                       help="a resource (deployments, pp, resourcebindings, clusters.cluster.karmada.io, *)")
    can_i.add_argument("-n", "--namespace", default="default")
    can_i.add_argument("-A", "--all-namespaces", action="store_true", help="in every namespace")
    can_i.add_argument("--subresource", default="", help="e.g. status")
    can_i.add_argument("--as", dest="as_user", default=None, metavar="USER",
                       help="ask for this user (needs the impersonate verb on users)")
    can_i.add_argument("--as-group", dest="as_groups", action="append", default=[], metavar="GROUP",
                       help="and this group (repeatable; needs impersonate on groups)")
    can_i.add_argument("-q", "--quiet", action="store_true", help="print nothing; the exit code answers")
    can_i.set_defaults(run=cmd_can_i)
