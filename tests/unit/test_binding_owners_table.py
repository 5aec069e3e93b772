"""The table of who writes each binding field (flotilla/api/owners.py): it covers every field of a
binding's spec and status, names only functions that exist and services that exist, and
docs/architecture.md's "Who writes what" is the table."""

from __future__ import annotations

import importlib
from pathlib import Path

from flotilla.api import owners
from flotilla.api.v1 import work_pb2

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Who writes what\n"


def resolve(dotted: str) -> object:
    """`package.module.Class.method` or `package.module.function`: the longest importable
    module, then attributes."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(dotted)


def test_every_field_of_spec_and_status_has_one_entry() -> None:
    fields = {f"spec.{f.json_name}" for f in work_pb2.ResourceBindingSpec.DESCRIPTOR.fields}
    fields |= {f"status.{f.json_name}" for f in work_pb2.ResourceBindingStatus.DESCRIPTOR.fields}
    fields.discard("status.conditions")  # by type
    names = [f.name for f in owners.FIELDS]
    assert len(names) == len(set(names)), "one entry per field"
    listed = {n for n in names if not n.startswith(("metadata.", "status.conditions["))}
    assert listed == fields


def test_every_writer_is_a_service_and_every_function_exists() -> None:
    for field in owners.FIELDS:
        assert field.owner is None or field.owner in (*owners.SERVICES, owners.USER), field.name
        assert field.owner is not None or field.rule, f"{field.name}: without an owner, one rule for all"
        assert field.owner == owners.USER or field.rule, f"{field.name}: its owner's rule"
        for writer in field.others:
            assert writer.service in owners.SERVICES and writer.service != field.owner, field.name
            assert writer.via, f"{field.name}: {writer.service} writes it through what?"
        for dotted in (*field.rule, *(v for w in field.others for v in w.via)):
            assert callable(resolve(dotted)), f"{field.name}: {dotted} is not a function"


def test_the_architecture_document_carries_the_table() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert text.count(SECTION) == 1
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|")) + "\n"
    assert table == owners.markdown(), "docs/architecture.md: paste flotilla.api.owners.markdown() in 'Who writes what'"
