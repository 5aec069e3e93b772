"""docs/differences.md lists exactly the Karmada fields admission refuses or warns about, and the
karmada.io kinds it refuses: the docs stay true as the tables change."""

from __future__ import annotations

import re
from pathlib import Path

from flotilla.api import registry
from flotilla.cli.kinds import served_kinds
from services.webhook.rules.karmada_fields import REFUSED, WARNED, KarmadaField

DOCS = Path(__file__).resolve().parents[2] / "docs" / "differences.md"


def _section() -> str:
    text = DOCS.read_text()
    return text.split("## Karmada fields and kinds refused or warned about", 1)[1].split("\n## ", 1)[0]



def _documented() -> set[tuple[str, str, str]]:
    """(Refused|Warned, kind, path) of each row of the table in the section of differences.md."""
    rows = set()
    for line in _section().splitlines():
        match = re.match(r"^\| (Refused|Warned) \| ([A-Za-z, ]+) \| `([^`]+)` \|", line)
        if match:
            for kind in match.group(2).split(", "):
                rows.add((match.group(1), kind, match.group(3)))
    return rows


def test_docs_list_exactly_the_fields_refused_and_warned() -> None:
    expected = {("Refused", kind, path) for kind, path in _cases_of(REFUSED)}
    expected |= {("Warned", kind, path) for kind, path in _cases_of(WARNED)}
    assert _documented() == expected


def _cases_of(table: tuple[KarmadaField, ...]) -> list[tuple[str, str]]:
    return [(kind, f.path) for f in table for kind in f.kinds]


def test_docs_name_every_karmada_kind_refused() -> None:
    """Every karmada.io kind a Karmada API server serves that for_kind refuses is named."""
    section = _section()
    refused = []
    for api_version, kind in served_kinds():
        if not registry.is_karmada_group(registry.split_api_version(api_version)[0]):
            continue
        try:
            registry.for_kind(api_version, kind)
        except registry.UnsupportedKindError:
            refused.append(kind)
    assert refused
    assert [kind for kind in refused if f"`{kind}`" not in section] == []
