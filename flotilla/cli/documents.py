"""Reading `-f FILE|DIRECTORY|-` arguments into documents, and naming objects the way output lines do."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from flotilla.api import codec
from flotilla.api.errors import UserError


def read_documents(paths: list[str]) -> list[dict[str, Any]]:
    return [doc for _, doc in read_sources(paths)]


def source_name(path: str) -> str:
    """How output names where a document came from (kubectl says STDIN for `-`)."""
    return "STDIN" if path == "-" else path


# The files of a directory that `-f DIRECTORY` reads, as kubectl's: its own (not its
# subdirectories'), in name order.
MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")


def expand_paths(paths: list[str]) -> list[str]:
    """Each path, a directory replaced by its manifest files in name order."""
    files: list[str] = []
    for path in paths:
        if path != "-" and Path(path).is_dir():
            files += sorted(str(p) for p in Path(path).iterdir()
                            if p.suffix in MANIFEST_SUFFIXES and not p.is_dir())
        else:
            files.append(path)
    return files


def read_sources(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every document of every file (of a directory: of each of its manifest files), with the
    path it came from."""
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in expand_paths(paths):
        try:
            data = _read_stdin() if path == "-" else Path(path).read_bytes()
        except OSError as e:
            raise UserError(f"cannot read {path}: {e.strerror or e}") from e
        try:
            text = data if isinstance(data, str) else codec.utf8_text(data)
            found = codec.load_yaml_documents(text)
        except (yaml.YAMLError, ValueError) as e:
            raise UserError(f"{path}: {e}") from e
        for i, doc in enumerate(found):
            if not isinstance(doc, dict):
                raise UserError(f"{path}: document {i + 1} is not an object")
        docs.extend((path, doc) for doc in found)
    if not docs:
        raise UserError(f"no objects found in {', '.join(paths)}")
    return docs


def _read_stdin() -> bytes | str:
    # The bytes, so that a file that is not UTF-8 is named by its first bad byte; a test's
    # stand-in stdin has only text.
    buffer = getattr(sys.stdin, "buffer", None)
    return buffer.read() if buffer is not None else sys.stdin.read()


def display_name(doc: Mapping[str, Any]) -> str:
    """`kind/name` as apply and delete print it (kind in lower case)."""
    kind = str(doc.get("kind") or "unknown").lower()
    found = doc.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return f"{kind}/{meta.get('name') or '<unnamed>'}"
