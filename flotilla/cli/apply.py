"""`flotillactl apply -f FILE|-`: every document through admission.

All documents are validated before any is written, so a file with one bad
document changes nothing, and every bad document is reported, one line each:
an apiVersion/kind no server would know (flotilla.cli.kinds), or what admission
rejects. A field admitted without effect is said on stderr (`Warning: <path>: <why>`),
as kubectl prints the API server's warnings.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flotilla.api import registry
from flotilla.api.v1 import webhook_pb2
from flotilla.cli import printers
from flotilla.cli.connection import open_store
from flotilla.cli.documents import display_name, read_sources, source_name
from flotilla.cli.kinds import KnownKinds, is_crd
from flotilla.cli.reads import list_objects
from flotilla.cli.webhook_client import WebhookClient
from flotilla.store.base import StoreBase


def violations_line(name: str, response: webhook_pb2.AdmissionResponse) -> str:
    problems = "; ".join(f"{v.path}: {v.reason}" if v.path else v.reason for v in response.violations)
    return f"error: {name}: {problems or 'rejected'}"


def admission_request(doc: dict[str, Any]) -> webhook_pb2.AdmissionRequest:
    # UTF-8 as it is, not \u escapes, which would make a request up to twice the size read.
    return webhook_pb2.AdmissionRequest(object_json=json.dumps(doc, ensure_ascii=False))


async def stored_crds(store: StoreBase) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions applied so far (templates like any other kind)."""
    listed = await list_objects(store, registry.lookup("customresourcedefinitions"))
    return [printers.content(crd) for crd in listed.items]


def kind_problems(sources: list[tuple[str, dict[str, Any]]], crds: list[dict[str, Any]]) -> dict[int, str]:
    """Index -> one error line, for each document whose apiVersion/kind no server would map."""
    known = KnownKinds([*crds, *(doc for _, doc in sources if is_crd(doc))])
    problems = {}
    for i, (path, doc) in enumerate(sources):
        if not doc.get("apiVersion") or not doc.get("kind"):
            continue  # admission names the missing field (`kind: required`)
        problem = known.problem(doc)
        if problem:
            problems[i] = f'error: {display_name(doc)} from "{source_name(path)}": {problem}'
    return problems


async def cmd_apply(args: argparse.Namespace) -> int:
    sources = read_sources(args.filename)
    docs = [doc for _, doc in sources]
    async with open_store(args) as store:
        # Every problem of every document is reported before anything is written.
        known = KnownKinds([doc for doc in docs if is_crd(doc)])
        needs_crds = any(known.problem(doc) for doc in docs if doc.get("apiVersion") and doc.get("kind"))
        problems = kind_problems(sources, await stored_crds(store) if needs_crds else [])
        async with WebhookClient(store) as webhook:
            for i, doc in enumerate(docs):
                if i in problems:
                    continue
                request = admission_request(doc)
                response = await webhook.call(lambda s: s.Validate, request)
                if not response.allowed:
                    problems[i] = violations_line(display_name(doc), response)
            if problems:
                for i in sorted(problems):
                    print(problems[i], file=sys.stderr)
                return 1
            for doc in docs:
                request = admission_request(doc)
                response = await webhook.call(lambda s: s.Apply, request)
                if not response.allowed:
                    print(violations_line(display_name(doc), response), file=sys.stderr)
                    return 1
                # kubectl's form of the API server's Warning headers, before the result line.
                for warning in response.warnings:
                    print(f"Warning: {warning}", file=sys.stderr)
                print(f"{display_name(doc)} {response.result}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("apply", help="create or update objects from YAML through admission")
    p.add_argument("-f", "--filename", action="append", required=True, help="file with YAML documents, or -")
    p.set_defaults(run=cmd_apply)
