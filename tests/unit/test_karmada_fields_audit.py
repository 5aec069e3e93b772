"""Every field of Karmada's kinds that Flotilla holds is read somewhere, or is refused or warned
about at admission (services/webhook/rules/karmada_fields.py), or is status the plane itself
owns: nothing a user writes is stored and silently ignored.

"Read somewhere" is that the field's name appears in Flotilla's code beside its generated
messages and its JSON codec (which only translates). A field added to a proto and read nowhere
fails here until it does something, or the table says what admission tells its writer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.descriptor import Descriptor

from flotilla.api import registry
from services.webhook.rules.karmada_fields import REFUSED, WARNED

ROOT = Path(__file__).resolve().parents[2]
_NOT_READING = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi", "codec.py")
# Written by the plane (or by Karmada components Flotilla has no counterpart of), never by a user:
# nothing to refuse.
PLANE_STATUS = {
    "Cluster.status.resourceSummary.allocatableModelings": "computed from resourceModels, which are refused",
    "Cluster.status.remedyActions": "Karmada's Remedy controller's, a kind Flotilla refuses",
}


def _code_words() -> set[str]:
    words: set[str] = set()
    for base in ("flotilla", "services"):
        for path in (ROOT / base).rglob("*.py"):
            if not path.name.endswith(_NOT_READING):
                words.update(re.findall(r"[a-z_][a-z0-9_]*", path.read_text()))
    return words


def _fields(descriptor: Descriptor, path: str, seen: set[str]) -> Iterator[tuple[str, str]]:
    """(snake_case name, Karmada JSON path) of every field reachable from a kind."""
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        field_path = f"{path}.{field.json_name}"
        yield field.name, field_path
        message = field.message_type
        if message is not None and not message.GetOptions().map_entry and message.full_name.startswith("flotilla."):
            yield from _fields(message, field_path, seen)


def _answered(kind: str, path: str) -> bool:
    """Refused or warned, at this path or above it."""
    return any(kind in f.kinds and (path == f"{kind}.{f.path}" or path.startswith(f"{kind}.{f.path}."))
               for f in (*REFUSED, *WARNED))


def test_no_field_of_a_karmada_kind_is_stored_and_ignored() -> None:
    words = _code_words()
    karmada = [rt for rt in registry.BUILTINS if rt.group.endswith("karmada.io")]
    assert karmada
    ignored = []
    for rt in karmada:
        for name, path in _fields(rt.message.DESCRIPTOR, rt.kind, set()):
            plane_owned = any(path == p or path.startswith(p + ".") for p in PLANE_STATUS)
            if name not in words and not _answered(rt.kind, path) and not plane_owned:
                ignored.append(path)
    assert not ignored, ("fields stored and read nowhere: make them work, or add them to "
                         f"services/webhook/rules/karmada_fields.py (refused or warned): {ignored}")
