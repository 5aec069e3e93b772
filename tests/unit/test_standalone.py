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


def test_every_rule_the_code_cites_has_its_section_in_docs() -> None:
    sections = set(re.findall(r"^#+ ([0-9.]+)\s", (ROOT / "docs" / "karmada-rules.md").read_text(), flags=re.M))
    sections = {s.rstrip(".") for s in sections}
    cited: dict[str, str] = {}
    for base in ("flotilla", "services", "sim", "tests"):
        for path in (ROOT / base).rglob("*.py"):
            text = path.read_text()
            assert "spec " + "§" not in text, f"{path.relative_to(ROOT)} cites the spec instead of docs/"
            for number in re.findall(r"docs/karmada-rules\.md §([0-9]+(?:\.[0-9]+)*)", text):
                cited[number] = str(path.relative_to(ROOT))
    assert cited, "the code cites docs/karmada-rules.md"
    missing = {n: where for n, where in cited.items() if n not in sections}
    assert missing == {}
