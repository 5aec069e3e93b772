"""How large, deep and wide a document may be, so hostile input costs bounded time and memory.

The numbers are documented in docs/cli.md ("Limits"); docs/differences.md says where they
differ from Kubernetes and Karmada.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# etcd's default --max-request-bytes: the largest object a Kubernetes API server can store.
MAX_DOCUMENT_BYTES = 1_572_864
# Kubernetes' TotalAnnotationSizeLimitB: keys and values of all annotations together.
MAX_ANNOTATIONS_BYTES = 262_144
# Far deeper than any Karmada or Kubernetes object; shallow enough that the recursive
# codec stays well inside Python's recursion limit.
MAX_DEPTH = 100
# Values (scalars, lists and maps) of one document, each YAML alias counted every time it is used.
MAX_VALUES = 200_000
# Entries of a policy's resourceSelectors and of its placement's clusterAffinities: each one is
# matched against every template or cluster on every reconcile.
MAX_SELECTORS = 1_000
# Objects in one ApplyBatch request to the webhook (more: INVALID_ARGUMENT), and the bytes of
# object JSON a client puts in one (half gRPC's default 4 MiB receive limit, the webhook's
# --max-message-bytes, leaving room for the framing); a client splits a larger set into requests
# within both, and a single larger document travels alone.
MAX_BATCH_OBJECTS = 500
MAX_BATCH_BYTES = 2 * 2**20


# (value, parent node, key in the parent, depth): a path is only spelled out for an error.
_Node = tuple[Any, "_Node | None", "str | int", int]


def shape_problem(value: Any, root: str = "") -> tuple[str, str] | None:
    """(path, reason) for the first way `value` is too deep or too large; None when it fits.

    Iterative, so nesting cannot exhaust Python's stack, and it stops after MAX_VALUES values,
    so it costs bounded time even for a "billion laughs" YAML document: PyYAML loads each alias
    as one shared object, which this walk (like JSON encoding) visits once per use.
    """
    if not isinstance(value, Mapping | list | tuple):
        problem = _utf8(value)[1] if isinstance(value, str) else ""
        return (root, f"not valid Unicode: {problem}") if problem else None
    values = size = 0
    seen: set[int] = set()
    shared = False
    stack: list[_Node] = [(value, None, "", 1)]
    while stack:
        node = stack.pop()
        item, _, _, depth = node
        if depth > MAX_DEPTH:
            return _shorten(_path(node, root)), f"nested deeper than {MAX_DEPTH} levels"
        shared = shared or id(item) in seen
        seen.add(id(item))
        children = item.items() if isinstance(item, Mapping) else enumerate(item)
        for key, child in children:
            values += 1
            if isinstance(key, str):
                length, problem = _utf8(key)
                size += length
                if problem:
                    # The key cannot be printed, so the path stops at its map.
                    return _shorten(_path(node, root)), f"a key is not valid Unicode: {problem}"
            if isinstance(child, str):
                length, problem = _utf8(child)
                size += length
                if problem:
                    return _shorten(_path((child, node, key, depth + 1), root)), f"not valid Unicode: {problem}"
            elif isinstance(child, Mapping | list | tuple):
                stack.append((child, node, key, depth + 1))
            else:
                size += 1
        if values > MAX_VALUES or size > MAX_DOCUMENT_BYTES:
            limit = f"{MAX_VALUES} values" if values > MAX_VALUES else f"{MAX_DOCUMENT_BYTES} bytes"
            if shared:
                return root, f"YAML aliases expand the document past {limit}"
            return root, f"the document is larger than {limit}"
    return None


def _path(node: _Node, root: str) -> str:
    keys: list[str | int] = []
    current: _Node | None = node
    while current is not None and current[1] is not None:
        keys.append(current[2])
        current = current[1]
    text = root
    for key in reversed(keys):
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            text = f"{text}.{path_key(key)}" if text else path_key(key)
    return text


def path_key(key: str) -> str:
    """A key as a field path shows it: quoted, with escapes, when it holds a newline or the like,
    so that every error stays one line."""
    return key if key.isprintable() else json.dumps(key)


def _utf8(text: str) -> tuple[int, str]:
    """(bytes as UTF-8, "") or (0, the problem): a lone UTF-16 surrogate (JSON's "\\ud800")
    is no UTF-8 text, and so no protobuf string, can hold."""
    if text.isascii():  # the common case, and cheap
        return len(text), ""
    try:
        return len(text.encode()), ""
    except UnicodeEncodeError as e:
        return 0, f"lone surrogate \\u{ord(text[e.start]):04x} at character {e.start}"


def _shorten(path: str, keep: int = 80) -> str:
    # A path a hundred levels deep is no help on one line; its start says where it went wrong.
    return path if len(path) <= keep else path[:keep] + "…"


# What a message copied from elsewhere (a member cluster's answer, an error) may take of a
# condition, an Event or a span: Kubernetes caps an Event's message (events.k8s.io `note`) at
# 1 KiB, and a member's error text past that explains nothing more, while a member answering
# with megabytes of it would otherwise carry them into etcd (a Work's status write past etcd's
# 1.5 MiB request limit fails, and the Work never reports) and into every log line and span.
MAX_MESSAGE_BYTES = 1024
_TRUNCATED = "… [truncated from {} bytes]"


def truncate_message(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`text` in at most `limit` bytes of UTF-8: cut at a character boundary, and marked with how
    long it was. Always valid UTF-8 (a lone surrogate, which JSON's "\\ud800" decodes to and no
    protobuf string can hold, becomes "?"), so whatever it returns can be written. Idempotent: a
    truncated message is returned as it is."""
    if text.isascii():  # the common case, and cheap: one byte a character
        if len(text) <= limit:
            return text
        encoded = text.encode()
    else:
        encoded = text.encode(errors="replace")
        if len(encoded) <= limit:
            return encoded.decode()
    marker = _TRUNCATED.format(len(encoded))
    keep = max(0, limit - len(marker.encode()))
    # errors="ignore" drops a character cut in two at the end, and only that.
    return encoded[:keep].decode(errors="ignore") + marker
