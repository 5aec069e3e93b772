"""`flotillactl join NAME --kubeconfig …` and `unjoin NAME`, as karmadactl does them.

join stores the credentials as Secret `karmada-cluster/<name>` and the Cluster
pointing at it, both through admission. unjoin deletes the Cluster: it turns
terminating, its Works are cleaned, then it goes; unjoin waits for that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
from typing import Any

from flotilla.api import keys, registry
from flotilla.api.errors import UserError
from flotilla.api.v1 import webhook_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.cli.apply import violations_line
from flotilla.cli.connection import open_store
from flotilla.cli.webhook_client import WebhookClient
from flotilla.member import Credentials, MemberClient, MemberError, load_kubeconfig
from flotilla.rules.cluster_secrets import secret_document
from flotilla.runtime.flags import duration
from flotilla.store.base import StoreBase, WatchKind

# Karmada's join reads the member's id from this ClusterProperty first (about.k8s.io).
CLUSTER_PROPERTY_API = "about.k8s.io/v1alpha1"
CLUSTER_ID_PROPERTY = "cluster.clusterset.k8s.io"


def parse_labels(text: str) -> dict[str, str]:
    labels = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f'invalid label "{item}": use key=value')
        labels[key] = value
    return labels


def cluster_document(args: argparse.Namespace, insecure: bool, proxy_url: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "apiEndpoint": args.server,
        "syncMode": args.mode,
        "secretRef": {"namespace": CLUSTER_SECRET_NAMESPACE, "name": args.name},
    }
    if insecure:
        spec["insecureSkipTLSVerification"] = True
    if proxy_url:
        spec["proxyURL"] = proxy_url
    for field in ("provider", "region", "zone"):
        if getattr(args, field):
            spec[field] = getattr(args, field)
    metadata: dict[str, Any] = {"name": args.name}
    if args.labels:
        metadata["labels"] = parse_labels(args.labels)
    return {"apiVersion": registry.CLUSTER.api_version, "kind": "Cluster", "metadata": metadata, "spec": spec}


async def join_cluster(store: StoreBase, args: argparse.Namespace, rejoin: bool = False) -> None:
    """Store the credentials and the Cluster; with `rejoin`, refresh those of a joined cluster."""
    try:
        credentials = load_kubeconfig(args.kubeconfig, args.context)
    except (OSError, ValueError) as e:
        raise UserError(f"kubeconfig {args.kubeconfig}: {e}") from e
    args.server = credentials.server
    # --proxy-url, else the kubeconfig cluster's proxy-url: the member is reached through it from here on.
    proxy_url = getattr(args, "proxy_url", "") or credentials.proxy_url
    credentials = dataclasses.replace(credentials, proxy_url=proxy_url)
    cluster = cluster_document(args, credentials.insecure_skip_tls_verify, proxy_url)
    if not rejoin and await store.try_get(registry.CLUSTER, "", args.name) is not None:
        raise UserError(f'cluster "{args.name}" is already joined')
    cluster_id = await member_cluster_id(credentials)
    if cluster_id:
        cluster["spec"]["id"] = cluster_id
        await refuse_second_join(store, args.name, cluster_id)
    else:
        print(f"warning: cluster({args.name}): its id could not be read (the member's kube-system namespace); "
              "joined without spec.id", file=sys.stderr)
    async with WebhookClient(store) as webhook:
        # Validate the Cluster before anything is written, so a bad flag leaves no Secret behind.
        for method, doc in (("Validate", cluster), ("Apply", secret_document(args.name, credentials)),
                            ("Apply", cluster)):
            request = webhook_pb2.AdmissionRequest(object_json=json.dumps(doc))
            # Called at once, so the lambda sees this iteration's method.
            response: webhook_pb2.AdmissionResponse = await webhook.call(
                lambda s: getattr(s, method), request)  # noqa: B023
            if not response.allowed:
                raise UserError(violations_line(f"cluster/{args.name}", response).removeprefix("error: "))


async def member_cluster_id(credentials: Credentials) -> str:
    """The member's id as Karmada's join takes it: the value of its ClusterProperty
    `cluster.clusterset.k8s.io` (about.k8s.io, KEP-2149) when it serves one, else the uid of its
    kube-system namespace; "" when neither can be read (the member is away, the token may not
    read namespaces)."""
    async with MemberClient(credentials, timeout=10.0) as client:
        try:
            prop = await client.get(CLUSTER_PROPERTY_API, "ClusterProperty", "", CLUSTER_ID_PROPERTY)
        except MemberError as e:
            if e.status is None:  # no answer: the namespace would not be read either
                return ""
            prop = None  # most members do not serve the kind (404), or the token may not read it
        value = ((prop or {}).get("spec") or {}).get("value")
        if isinstance(value, str) and value:
            return value
        try:
            namespace = await client.get("v1", "Namespace", "", "kube-system")
        except MemberError:
            return ""
        uid = ((namespace or {}).get("metadata") or {}).get("uid")
        return uid if isinstance(uid, str) else ""


async def refuse_second_join(store: StoreBase, name: str, cluster_id: str) -> None:
    """A member already joined under another name (same spec.id) is not joined again: two
    Clusters for one member would have the scheduler count its capacity twice and the executor
    apply each Work to it twice, under two execution namespaces. Checked here, where every Cluster
    can be listed, and not at admission, which sees one object."""
    for other in (await store.list(registry.CLUSTER)).items:
        if other.spec.id == cluster_id and other.metadata.name != name:
            raise UserError(f'cluster "{name}": this member (id {cluster_id}) is already joined as '
                            f'cluster "{other.metadata.name}"')


def join_args(name: str, kubeconfig: str, mode: str = "Push", **extra: str) -> argparse.Namespace:
    """The arguments `join` takes, for callers that join clusters without a command line."""
    values = {"context": None, "labels": "", "provider": "", "region": "", "zone": "", "proxy_url": "", **extra}
    return argparse.Namespace(name=name, kubeconfig=kubeconfig, mode=mode, **values)


async def cmd_join(args: argparse.Namespace) -> int:
    async with open_store(args) as store:
        await join_cluster(store, args)
    print(f"cluster({args.name}) is joined successfully")
    return 0


async def cmd_unjoin(args: argparse.Namespace) -> int:
    async with open_store(args) as store:
        cluster = await store.try_get(registry.CLUSTER, "", args.name)
        if cluster is None:
            raise UserError(f'clusters "{args.name}" not found')
        key = keys.etcd_key(registry.CLUSTER.resource, "", args.name)
        got = await store.kv_get(key)
        # Watch from the revision read, so a removal between delete and watch is not missed.
        watch = store.watch(key, got.mod_revision + 1 if got else 1)
        async with contextlib.aclosing(watch) as changes:
            request = webhook_pb2.DeleteRequest(api_version=registry.CLUSTER.api_version, kind="Cluster",
                                                name=args.name)
            async with WebhookClient(store) as webhook:
                response = await webhook.call(lambda s: s.Delete, request)
            if response.result != "deleted" and args.wait > 0:
                try:
                    async with asyncio.timeout(args.wait):
                        async for change in changes:
                            if change.key == key and change.kind == WatchKind.DELETE:
                                break
                except TimeoutError:
                    print(f"cluster({args.name}) is terminating: its works are still being cleaned")
                    return 0
    print(f"cluster({args.name}) is unjoined successfully")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("join", help="register a member cluster")
    p.add_argument("name")
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the member cluster")
    p.add_argument("--context", default=None)
    p.add_argument("--mode", choices=["Push", "Pull"], default="Push")
    p.add_argument("--labels", default="", help="k=v,k2=v2")
    p.add_argument("--provider", default="")
    p.add_argument("--region", default="")
    p.add_argument("--zone", default="")
    p.add_argument("--proxy-url", default="",
                   help="http(s) proxy every request to the member goes through (Cluster spec.proxyURL; "
                        "default: the kubeconfig cluster's proxy-url)")
    p.set_defaults(run=cmd_join)
    p = sub.add_parser("unjoin", help="remove a member cluster once its works are cleaned")
    p.add_argument("name")
    p.add_argument("--wait", type=duration, default=duration("2m"), help="how long to wait for the removal")
    p.set_defaults(run=cmd_unjoin)
