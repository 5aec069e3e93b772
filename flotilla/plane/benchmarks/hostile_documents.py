"""Hostile documents and the one line each must be answered with: what the hostile benchmark
measures refusing, and data shared by the unit tests (the pure read and admission path, time and
memory bounded) and the integration test (`flotillactl apply -f` and the webhook's Apply over
gRPC); with the admission path without the store that the benchmark and the tests run.

Each has the YAML bytes a user would apply, the body a client would send the webhook
(None where JSON cannot say it: JSON has no aliases) and the line's tell-tale part; `path`
is the field an admission violation names ("" for a problem with the document as a whole).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flotilla.api import codec
from flotilla.api.limits import MAX_ANNOTATIONS_BYTES, MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_SELECTORS, MAX_VALUES
from flotilla.api.v1 import webhook_pb2
from services.webhook.admission import Review, admit, decode
from services.webhook.defaulting import AdmissionConfig
from services.webhook.servicer import Request, document


@dataclass(frozen=True)
class Hostile:
    name: str
    text: Callable[[], bytes]
    path: str
    reason: str
    # Whether flotillactl refuses it while reading the file, before asking the webhook.
    refused_when_read: bool
    body: Callable[[], bytes] | None = None

    def request_body(self) -> bytes | None:
        """The object_json a client sends: the YAML as JSON unless the case says otherwise."""
        if self.body is not None:
            return self.body()
        if self.refused_when_read:
            return None
        (doc,) = codec.load_yaml_documents(self.text().decode())
        return json.dumps(doc).encode()


def _config_map(name: str, body: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n{body}"


def _big_annotations() -> bytes:
    return _config_map("big-annotations", f"  annotations:\n    example.com/blob: {'x' * 1_000_000}\n").encode()


def _alias_bomb() -> bytes:
    # "Billion laughs": nine levels of nine aliases, 9**9 strings once expanded.
    lines = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return _config_map("laughs", "data:\n" + "\n".join(lines) + "\n").encode()


def _deep_lists() -> bytes:
    return _config_map("deep", "data:\n  deep: " + "[" * 10_000 + "]" * 10_000 + "\n").encode()


def _deep_maps() -> bytes:
    # Deeper than the codec allows, shallower than libyaml's own bound: the line names the path.
    return _config_map("deep", "data:\n  deep: " + "{a: " * 150 + "1" + "}" * 150 + "\n").encode()


def _policy(name: str, spec: str) -> str:
    return (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        f"metadata:\n  name: {name}\n  namespace: default\nspec:\n{spec}"
    )


def _many_resource_selectors() -> bytes:
    selector = "    - apiVersion: apps/v1\n      kind: Deployment\n      name: web-{}\n"
    selectors = "".join(selector.format(i) for i in range(10_000))
    placement = "  placement:\n    clusterAffinity:\n      clusterNames: [member1]\n"
    return _policy("many-selectors", "  resourceSelectors:\n" + selectors + placement).encode()


def _json_config_map(data: str) -> bytes:
    return ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},'
            f'"data":{data}}}').encode()


def _not_utf8() -> bytes:
    return _config_map("caf\xe9", "data:\n  a: b\n").encode("latin-1")


def _too_large() -> bytes:
    return _config_map("large", f"data:\n  blob: {'x' * (MAX_DOCUMENT_BYTES + 1000)}\n").encode()


HOSTILE: list[Hostile] = [
    Hostile("1MB-annotations", _big_annotations, "metadata.annotations",
            f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes", refused_when_read=False),
    Hostile("alias-bomb", _alias_bomb, "", f"YAML aliases expand the document past {MAX_VALUES} values",
            refused_when_read=True),
    Hostile("10000-nested-lists", _deep_lists, "", f"nested deeper than {MAX_DEPTH} levels",
            refused_when_read=True, body=lambda: _json_config_map("[" * 10_000 + "]" * 10_000)),
    Hostile("150-nested-maps", _deep_maps, "data.deep.a.a", f"nested deeper than {MAX_DEPTH} levels",
            refused_when_read=True, body=lambda: _json_config_map('{"deep":' + '{"a":' * 150 + "1" + "}" * 151)),
    Hostile("10000-resource-selectors", _many_resource_selectors, "spec.resourceSelectors",
            f"Too many: 10000: must have at most {MAX_SELECTORS} items", refused_when_read=False),
    Hostile("not-utf8", _not_utf8, "", "not UTF-8 at byte 52 (0xe9)", refused_when_read=True,
            body=_not_utf8),
    Hostile("larger-than-a-document", _too_large, "", f"the document is larger than {MAX_DOCUMENT_BYTES} bytes",
            refused_when_read=True, body=lambda: _json_config_map(json.dumps({"blob": "x" * MAX_DOCUMENT_BYTES}))),
]


def raw_request(body: bytes) -> bytes:
    """An AdmissionRequest's wire bytes with `body` as object_json, UTF-8 or not (field 1, length-delimited)."""
    length, size = bytearray(), len(body)
    while True:
        byte, size = size & 0x7F, size >> 7
        length.append(byte | (0x80 if size else 0))
        if not size:
            return b"\x0a" + bytes(length) + body


# -- the admission path without the store ------------------------------------------------------

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CONFIG = AdmissionConfig()


def request_for(doc: Any) -> webhook_pb2.AdmissionRequest:
    """The request a JSON client sends (escaping non-ASCII, so a lone surrogate gets through too)."""
    return webhook_pb2.AdmissionRequest(object_json=json.dumps(doc))


def pure_admission(request: Request) -> Review:
    """What the webhook does with a CREATE, without the store: JSON, decode, default, validate."""
    doc = document(request)
    if isinstance(doc, Review):
        return doc
    review = decode(doc)
    if review.obj is not None:
        review.errors = admit(review.obj, None, CONFIG, NOW)
    return review
