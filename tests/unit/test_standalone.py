"""The repository stands on its own: nothing it runs or documents reaches outside the checkout."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a fresh clone runs or tells its reader to open.
CHECKED = ["tests", "scripts", "docs", "examples", "Makefile", "README.md", "pyproject.toml"]
OUTSIDE = re.compile(r"\.\./shared|shared/examples")
TEXT_SUFFIXES = {".py", ".sh", ".md", ".yaml", ".yml", ".toml", ".txt", ".json", ""}


def _files() -> list[Path]:
    found: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in sorted(path.rglob("*"))
                      if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts]
    return [p for p in found if p.resolve() != Path(__file__).resolve()]


def test_nothing_refers_to_files_beside_the_checkout() -> None:
    files = _files()
    assert any(p.name == "README.md" for p in files) and any(p.parent.name == "tests" for p in files)
    offending = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1)
        if OUTSIDE.search(line)
    ]
    assert offending == [], "references to files outside the repository:\n" + "\n".join(offending)


def test_readme_links_only_files_in_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)", text)
    assert targets, "the README links its docs"
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert missing == []
