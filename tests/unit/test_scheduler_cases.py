"""Every case in tests/schedule_cases/ through `flotillactl schedule -f … -o json`, in-process.

The case files are plain schedule inputs; their header comments hold the expectations
(see tests/schedule_cases/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import flotillactl

CASES_DIR = Path(__file__).resolve().parents[1] / "schedule_cases"
CASES = sorted((CASES_DIR / "cases").glob("*.yaml"))


def header(path: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key.startswith(("expect", "fleet")) and " " not in key:
            fields[key] = value.strip()
    return fields


def targets(text: str) -> list[dict[str, Any]]:
    if text == "<none>":
        return []
    return [{"name": name.strip(), "replicas": int(replicas)}
            for name, replicas in (item.split(":") for item in text.split(","))]


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case(case: Path) -> None:
    expect = header(case)
    assert "expect" in expect, f"{case.name} has no '# expect:' line"
    files = ["-f", str(case)]
    if "fleet" in expect:
        files += ["-f", str(CASES_DIR / "fleets" / f"{expect['fleet']}.yaml")]
    code, out, err = flotillactl("schedule", *files, "-o", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["clusters"] == targets(expect["expect"])
    assert result["reason"] == expect.get("expect-reason", "Success")
    if "expect-error" in expect:
        assert expect["expect-error"] in (result["error"] or "")
    else:
        assert result["error"] is None
    if "expect-filtered" in expect:
        wanted = dict(item.strip().split("=") for item in expect["expect-filtered"].split(","))
        assert {f["cluster"]: f["plugin"] for f in result["filtered"]} == wanted
    if "expect-affinity" in expect:
        assert result.get("affinityName") == expect["expect-affinity"]
