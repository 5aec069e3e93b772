"""The lock files (requirements/README.md) hold every dependency pyproject.toml names, at a
version its specifier admits, with hashes: what `make test`, `make demo` and deploy/Dockerfile
install with --require-hashes. A dependency added to pyproject.toml without `make lock` fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)")


def pins(lock: str) -> dict[str, str]:
    found = {}
    text = (ROOT / "requirements" / lock).read_text()
    for line in text.splitlines():
        if match := _PIN.match(line):
            found[canonicalize_name(match.group(1))] = match.group(2)
    # Every pinned package carries at least one hash.
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text)
    for block in blocks:
        if _PIN.match(block.strip()):
            assert "--hash=sha256:" in block, f"{lock}: {block.splitlines()[0]} has no hash"
    return found


def declared(extra: str | None) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"])
    if extra:
        names += project["optional-dependencies"][extra]
    return [Requirement(name) for name in names]


@pytest.mark.parametrize(("lock", "extra"), [("run.lock", None), ("test.lock", "test")])
def test_every_dependency_is_locked_at_a_version_it_admits(lock: str, extra: str | None) -> None:
    locked = pins(lock)
    for requirement in declared(extra):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in requirements/{lock}: run `make lock`"
        assert requirement.specifier.contains(locked[name], prereleases=True), \
            f"requirements/{lock} pins {name}=={locked[name]}, which {requirement} does not admit: run `make lock`"


def test_the_build_lock_holds_pip_and_the_build_backend() -> None:
    locked = pins("build.lock")
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert "pip" in locked
    for requirement in map(Requirement, backend):
        assert requirement.specifier.contains(locked[canonicalize_name(requirement.name)])
