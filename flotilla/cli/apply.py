"""`flotillactl apply -f FILE|DIRECTORY|-`: every document through admission.

All documents are validated before any is written, so a file with one bad
document changes nothing, and every bad document is reported, one line each:
an apiVersion/kind no server would know (flotilla.cli.kinds), or what admission
rejects. A field admitted without effect is said on stderr (`Warning: <path>: <why>`),
as kubectl prints the API server's warnings.

The documents travel in few requests (the webhook's ApplyBatch, split by
WebhookClient.apply_batch): one dry run of them all, then the write, each
object answered on its own and printed in file order.
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


def object_json(doc: dict[str, Any]) -> bytes:
    """A document as ApplyBatch carries it: UTF-8 JSON, characters as they are (\\u escapes would
    make a request up to twice the size read)."""
    text = json.dumps(doc, ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate ("\\ud800" in the YAML) travels escaped, for admission to name its path.
        return json.dumps(doc).encode()


def result_error(doc: dict[str, Any], result: webhook_pb2.AdmissionBatchResult) -> str:
    """One line for an object ApplyBatch refused: its violations, or the refusal a single Apply
    would have ended with (PERMISSION_DENIED, in Kubernetes' words, which name the resource)."""
    if result.error_code:
        return f"error: {result.error}"
    return violations_line(display_name(doc), result.response)


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
            # Every document in few requests (ApplyBatch), a dry run first: all are validated
            # before any is written.
            wanted = [i for i in range(len(docs)) if i not in problems]
            bodies = {i: object_json(docs[i]) for i in wanted}
            checked = await webhook.apply_batch([bodies[i] for i in wanted], dry_run=True)
            for i, result in zip(wanted, checked, strict=True):
                if result.error_code or not result.response.allowed:
                    problems[i] = result_error(docs[i], result)
            if problems:
                for i in sorted(problems):
                    print(problems[i], file=sys.stderr)
                return 1
            applied = await webhook.apply_batch([bodies[i] for i in range(len(docs))])
            failed = False
            for doc, result in zip(docs, applied, strict=True):
                if result.error_code or not result.response.allowed:
                    # Only a write that raced another one gets here (the dry run admitted it);
                    # the others were applied, as kubectl goes on past a failed object.
                    print(result_error(doc, result), file=sys.stderr)
                    failed = True
                    continue
                # kubectl's form of the API server's Warning headers, before the result line.
                for warning in result.response.warnings:
                    print(f"Warning: {warning}", file=sys.stderr)
                print(f"{display_name(doc)} {result.response.result}")
            if failed:
                return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("apply", help="create or update objects from YAML through admission")
    p.add_argument("-f", "--filename", action="append", required=True,
                   help="file with YAML documents, a directory of them (its .yaml, .yml and .json files), or -")
    p.set_defaults(run=cmd_apply)
