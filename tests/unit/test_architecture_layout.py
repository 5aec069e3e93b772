"""docs/architecture.md's "Repository layout" is the tree: every path it lists exists, and every
package of flotilla/, every module at its root and every top-level folder of the repository is
listed (a new one fails here until the layout says what it is for)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Repository layout"
# Top-level folders a reader of the layout needs; hidden ones and build output are not.
TOP_LEVEL = ("protos", "flotilla", "services", "sim", "examples", "tests", "docs", "deploy", "scripts")


def listed() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split(SECTION, 1)[1].split("```", 2)[1]
    return [line.split()[0] for line in block.splitlines() if line and not line[0].isspace()]


def exists(entry: str) -> bool:
    pattern = re.sub(r"<[^>]+>", "*", entry.rstrip("/"))
    return any(ROOT.glob(pattern)) if "*" in pattern else (ROOT / pattern).exists()


def covered(path: str, entries: list[str]) -> bool:
    return any(path == e.rstrip("/") or (e.endswith("/") and "<" not in e and path.startswith(e)) for e in entries)


def test_every_listed_path_exists() -> None:
    missing = [e for e in listed() if not exists(e)]
    assert not missing, f"docs/architecture.md lists paths the tree does not have: {missing}"


def test_every_package_root_module_and_folder_is_listed() -> None:
    entries = listed()
    wanted = [f"flotilla/{p.name}" for p in sorted((ROOT / "flotilla").iterdir())
              if p.is_dir() and (p / "__init__.py").exists()]
    wanted += [f"flotilla/{p.name}" for p in sorted((ROOT / "flotilla").glob("*.py")) if p.name != "__init__.py"]
    unlisted = [w for w in wanted if not covered(w, entries)]
    unlisted += [name for name in TOP_LEVEL
                 if (ROOT / name).is_dir() and not any(e.startswith(name + "/") for e in entries)]
    assert not unlisted, f"docs/architecture.md's layout does not say what these are for: {unlisted}"
