"""A checkout with nothing beside it imports every module and passes the unit tests that read its
files.

The tree is built from `git ls-files -co --exclude-standard` (tracked files plus untracked ones
that are not ignored) copied into an empty temporary directory, rather than from `git clone`: a
clone holds only committed state, so it would test the last commit and miss, or wrongly blame,
the change being made. Once committed, the copied set is exactly what a clone holds. The copy
runs with this interpreter and its installed dependencies, with PYTHONPATH pointing at the copy
so that the copy's own code is imported, not the editable install of this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def checkout_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    # Tracked files deleted in the working tree are listed too: a clone after commit lacks them.
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def test_unit_tests_pass_in_a_checkout_with_nothing_beside_it(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "alone" / "flotilla"  # alone/ holds nothing else
    for name in checkout_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    assert sorted(p.name for p in clone.parent.iterdir()) == ["flotilla"]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FLOTILLA_"))}
    env["PYTHONPATH"] = str(clone)
    imported = subprocess.run([sys.executable, "-c", "import flotilla, services, tests; "
                               "print(flotilla.__file__, services.__file__, tests.__file__)"],
                              cwd=clone, env=env, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert all(Path(p).is_relative_to(clone) for p in imported.stdout.split()), imported.stdout

    # Every module imports from the copy alone.
    modules = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE], cwd=clone, env=env,
                             capture_output=True, text=True, timeout=300)
    assert modules.returncode == 0, modules.stderr[-4000:]
    # The unit tests that read the checkout's own files (docs, examples, deploy, locks), from the
    # copy: the others read nothing a checkout could lack, and run in the suite anyway.
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", *file_reading_tests(clone),
                             "-p", "no:cacheprovider"], cwd=clone, env=env, capture_output=True, text=True, timeout=800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]


IMPORT_EVERY_MODULE = """
import importlib, pkgutil
import flotilla, services, sim
for package in (flotilla, services, sim):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
"""
# A path under the checkout in code: `ROOT / ...`, the examples, or a quoted path of docs/,
# examples/, deploy/ or requirements/. Not `cwd=ROOT` or a docstring naming a doc, which read nothing.
_READS_FILES = re.compile(r"\bROOT\s*/|EXAMPLES_DIR|[\"'](?:docs|examples|deploy|requirements)/")


def file_reading_tests(clone: Path) -> list[str]:
    found = [str(p.relative_to(clone)) for p in sorted((clone / "tests" / "unit").glob("test_*.py"))
             if _READS_FILES.search(p.read_text())]
    assert found, "no unit test reads the checkout's files?"
    return found
