"""How large, deep and wide a document may be, so hostile input costs bounded time and memory.

The numbers are documented in docs/cli.md ("Limits"); docs/differences.md says where they
differ from Kubernetes and Karmada.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Node:
    value: Any
    parent: _Node | None
    key: str
    depth: int

    def path(self, root: str) -> str:
        keys: list[str] = []
        node: _Node | None = self
        while node is not None and node.parent is not None:
            keys.append(node.key)
            node = node.parent
        text = root
        for key in reversed(keys):
            text = f"{text}{key}" if key.startswith("[") or not text else f"{text}.{key}"
        return text


def shape_problem(value: Any, root: str = "") -> tuple[str, str] | None:
    """(path, reason) for the first way `value` is too deep or too large; None when it fits.

    Iterative, so nesting cannot exhaust Python's stack, and it stops after MAX_VALUES values,
    so it costs bounded time even for a "billion laughs" YAML document: PyYAML loads each alias
    as one shared object, which this walk (like JSON encoding) visits once per use.
    """
    values = size = 0
    seen: set[int] = set()
    shared = False
    stack = [_Node(value, None, "", 1)]
    while stack:
        node = stack.pop()
        item = node.value
        values += 1
        size += len(item) if isinstance(item, str) else 1
        if values > MAX_VALUES or size > MAX_DOCUMENT_BYTES:
            limit = f"{MAX_VALUES} values" if values > MAX_VALUES else f"{MAX_DOCUMENT_BYTES} bytes"
            if shared:
                return root, f"YAML aliases expand the document past {limit}"
            return root, f"the document is larger than {limit}"
        if isinstance(item, str) and _surrogate(item):
            return _shorten(node.path(root)), f"not valid Unicode: {_surrogate(item)}"
        if not isinstance(item, Mapping | list | tuple):
            continue
        if node.depth > MAX_DEPTH:
            return _shorten(node.path(root)), f"nested deeper than {MAX_DEPTH} levels"
        if id(item) in seen:
            shared = True
        seen.add(id(item))
        if isinstance(item, Mapping):
            for key, child in item.items():
                size += len(key) if isinstance(key, str) else 1
                if isinstance(key, str) and _surrogate(key):
                    # The key cannot be printed, so the path stops at its map.
                    return _shorten(node.path(root)), f"a key is not valid Unicode: {_surrogate(key)}"
                stack.append(_Node(child, node, path_key(str(key)), node.depth + 1))
        else:
            stack.extend(_Node(child, node, f"[{i}]", node.depth + 1) for i, child in enumerate(item))
    return None


def path_key(key: str) -> str:
    """A key as a field path shows it: quoted, with escapes, when it holds a newline or the like,
    so that every error stays one line."""
    return key if key.isprintable() else json.dumps(key)


def _surrogate(text: str) -> str:
    """A lone UTF-16 surrogate (JSON's "\\ud800"), which no UTF-8 text, and so no protobuf string, can hold."""
    if text.isascii():
        return ""
    try:
        text.encode()
    except UnicodeEncodeError as e:
        return f"lone surrogate \\u{ord(text[e.start]):04x} at character {e.start}"
    return ""


def _shorten(path: str, keep: int = 80) -> str:
    # A path a hundred levels deep is no help on one line; its start says where it went wrong.
    return path if len(path) <= keep else path[:keep] + "…"
