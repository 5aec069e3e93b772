"""`flotillactl apply -f FILE|-`: every document through admission.

All documents are validated before any is written, so a file with one bad
document changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys

from flotilla.api.v1 import webhook_pb2
from flotilla.cli.connection import open_store
from flotilla.cli.documents import display_name, read_documents
from flotilla.cli.webhook_client import WebhookClient


def violations_line(name: str, response: webhook_pb2.AdmissionResponse) -> str:
    problems = "; ".join(f"{v.path}: {v.reason}" if v.path else v.reason for v in response.violations)
    return f"error: {name}: {problems or 'rejected'}"


async def cmd_apply(args: argparse.Namespace) -> int:
    docs = read_documents(args.filename)
    async with open_store(args) as store:
        webhook = WebhookClient(store)
        rejected = 0
        for doc in docs:
            request = webhook_pb2.AdmissionRequest(object_json=json.dumps(doc))
            response = await webhook.call(lambda s: s.Validate, request)
            if not response.allowed:
                rejected += 1
                print(violations_line(display_name(doc), response), file=sys.stderr)
        if rejected:
            return 1
        for doc in docs:
            request = webhook_pb2.AdmissionRequest(object_json=json.dumps(doc))
            response = await webhook.call(lambda s: s.Apply, request)
            if not response.allowed:
                print(violations_line(display_name(doc), response), file=sys.stderr)
                return 1
            print(f"{display_name(doc)} {response.result}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apply", help="create or update objects from YAML through admission")
    p.add_argument("-f", "--filename", action="append", required=True, help="file with YAML documents, or -")
    p.set_defaults(run=cmd_apply)
