"""`flotillactl get KIND [NAME]`: objects from etcd as kubectl prints them."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from flotilla.api import registry
from flotilla.api.errors import UserError
from flotilla.api.registry import ResourceType, UnknownResourceError
from flotilla.api.v1 import meta_pb2
from flotilla.cli import printers
from flotilla.cli.connection import open_store
from flotilla.cli.reads import Listed, list_objects, try_get_object, undecodable_line
from flotilla.store import Forbidden
from flotilla.store.base import StoreBase

OUTPUTS = ("wide", "json", "yaml", "name")
DEFAULT_NAMESPACE = "default"

M = TypeVar("M", bound=Message)

# key=value or key==value; keys may carry a DNS prefix (`app.kubernetes.io/name`).
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9][-A-Za-z0-9_./]*)\s*==?\s*([-A-Za-z0-9_.]*)\s*$")


def parse_selector(text: str | None) -> dict[str, str] | None:
    """`-l app=web,tier=front` as a dict; only equality terms are supported."""
    if not text:
        return None
    selector: dict[str, str] = {}
    for term in text.split(","):
        match = _EQUALITY.match(term)
        if match is None:
            raise UserError(f'unsupported label selector "{text}": only key=value terms, separated by commas')
        selector[match.group(1)] = match.group(2)
    return selector


def split_kind_name(kind: str, name: str | None) -> tuple[str, str | None]:
    """Accept kubectl's `KIND NAME` and `KIND/NAME` forms."""
    if "/" not in kind:
        return kind, name
    if name:
        raise UserError(f'there is no need to give a name after "{kind}": it already names the object')
    kind, _, name = kind.partition("/")
    if not kind or not name:
        raise UserError(f'"{kind}/{name}": expected KIND/NAME')
    return kind, name


def namespace_for(rt: ResourceType[Any], namespace: str | None, all_namespaces: bool = False) -> str | None:
    """The namespace to read; None means every namespace (or a cluster-scoped kind)."""
    if not rt.namespaced or all_namespaces:
        return None
    return namespace or DEFAULT_NAMESPACE


async def resolve_kind(store: StoreBase, name: str) -> ResourceType[Any]:
    """A built-in or well-known kind by any of its names, else a kind some stored CRD defines."""
    try:
        return registry.lookup(name)
    except UnknownResourceError:
        found = await _custom_kind(store, name) or await _stored_template_kind(store, name)
        if found is None:
            raise
        return found


async def _stored_template_kind(store: StoreBase, name: str) -> ResourceType[Any] | None:
    """A template kind with no CRD here (Flotilla stores templates of any kind): found by
    its stored objects, whose keys name `<plural>.<group>` and whose bodies say apiVersion and kind."""
    wanted = name.lower()
    candidates = {wanted, registry.plural_of(wanted)}
    try:
        stored, _ = await store.kv_range("/flotilla/")
    except Forbidden:
        return None  # a caller who may not list everything names kinds the plane knows
    for kv in stored:
        resource = kv.key.split("/")[2]
        plural, _, group = resource.partition(".")
        if group and (plural in candidates or resource == wanted):
            try:
                sample = meta_pb2.Unstructured.FromString(kv.value)
                return registry.for_kind(sample.api_version, sample.kind)
            except (DecodeError, UnknownResourceError):
                continue  # a value that does not decode says nothing about its kind: try the next
    return None


async def _custom_kind(store: StoreBase, name: str) -> ResourceType[Any] | None:
    # kubectl learns custom kinds from discovery, which serves what the CRDs declare;
    # CRDs are resource templates here, so they are in etcd for the reading.
    wanted = name.lower()
    for crd in (await list_objects(store, registry.lookup("customresourcedefinitions"))).items:
        spec = printers.content(crd).get("spec") or {}
        names = spec.get("names") or {}
        group, kind, plural = spec.get("group", ""), names.get("kind", ""), names.get("plural", "")
        singular = names.get("singular") or kind.lower()
        aliases = {kind.lower(), plural, singular, *(names.get("shortNames") or [])}
        aliases |= {f"{plural}.{group}", f"{singular}.{group}"}
        version = _served_version(spec)
        if wanted not in aliases or not kind or not group or not version:
            continue
        # Stored where every writer puts templates of this kind; scoped as the CRD says.
        rt = registry.for_kind(f"{group}/{version}", kind)
        return dataclasses.replace(rt, namespaced=spec.get("scope", "Namespaced") != "Cluster")
    return None


def _served_version(spec: dict[str, Any]) -> str:
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    for v in versions:
        if v.get("storage"):
            return str(v.get("name", ""))
    return str(versions[0].get("name", "")) if versions else str(spec.get("version", ""))


def render(
    rt: ResourceType[M],
    objs: list[M],
    output: str | None,
    now: datetime,
    *,
    single: bool,
    all_namespaces: bool,
    headers: bool = True,
) -> str:
    """The text `get` prints for objects already fetched, in the chosen output format."""
    if output == "json":
        return printers.render_json(rt, objs, single)
    if output == "yaml":
        return printers.render_yaml(rt, objs, single)
    if output == "name":
        return printers.render_names(rt, objs)
    text = printers.render_table(rt, objs, now, wide=output == "wide", namespace_column=all_namespaces)
    return text if headers else text.partition("\n")[2]


async def fetch(
    store: StoreBase,
    rt: ResourceType[M],
    namespace: str | None,
    name: str | None,
    selector: dict[str, str] | None,
) -> Listed[M]:
    """One named object (or a one-line not-found error), else the selected list in display order;
    values that do not decode are left out and named in `undecodable`."""
    if name is None:
        listed = await list_objects(store, rt, namespace, selector)
        return Listed(printers.display_order(rt, listed.items), listed.undecodable)
    obj = await try_get_object(store, rt, namespace or "", name)
    if obj is None:
        raise UserError(f'{rt.plural} "{name}" not found')
    return Listed([obj])


def _check(args: argparse.Namespace, name: str | None) -> None:
    if args.output is not None and args.output not in OUTPUTS:
        raise UserError(
            f'unable to match a printer suitable for the output format "{args.output}", '
            f"allowed formats are: {','.join(sorted(OUTPUTS))}"
        )
    if name is not None and args.selector:
        raise UserError("name cannot be provided when a selector is specified")
    if name is not None and args.all_namespaces:
        raise UserError("a resource cannot be retrieved by name across all namespaces")


async def cmd_get(args: argparse.Namespace) -> int:
    kind, name = split_kind_name(args.kind, args.name)
    _check(args, name)
    selector = parse_selector(args.selector)  # a bad selector fails before etcd is dialled
    async with open_store(args) as store:
        rt = await resolve_kind(store, kind)
        namespace = namespace_for(rt, args.namespace, args.all_namespaces)
        listed = await fetch(store, rt, namespace, name, selector)
    objs = listed.items
    # Each value that does not decode is one line on stderr; the good rows still print.
    for key in listed.undecodable:
        print(undecodable_line(rt, key), file=sys.stderr)
    failed = 1 if listed.undecodable else 0
    if not objs and args.output not in ("json", "yaml"):
        if not failed:
            # kubectl says so on stderr, so that a script reading stdout sees nothing.
            print(printers.no_resources(namespace), file=sys.stderr)
        return failed
    all_namespaces = bool(args.all_namespaces) and rt.namespaced
    print(render(rt, objs, args.output, datetime.now(UTC), single=name is not None, all_namespaces=all_namespaces,
                 headers=not args.no_headers))
    return failed


def add_namespace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default=None, help=f"namespace (default: {DEFAULT_NAMESPACE})")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("get", help="list or show objects, as kubectl get")
    p.add_argument("kind", metavar="KIND", help="clusters, pp, rb, works, deployments, … (or KIND/NAME)")
    p.add_argument("name", metavar="NAME", nargs="?", default=None)
    add_namespace_flag(p)
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    p.add_argument("-o", "--output", default=None, help="wide, json, yaml or name")
    p.add_argument("-l", "--selector", default=None, help="label selector: key=value[,key=value…]")
    p.add_argument("--no-headers", action="store_true", help="tables without their header line")
    p.set_defaults(run=cmd_get)
