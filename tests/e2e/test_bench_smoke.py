"""Every benchmark of flotilla/plane/benchmarks/ runs at its smallest (`python -m
flotilla.plane.benchmarks.<name> --smoke`), exits 0 and prints one JSON object, and leaves nothing
running: a benchmark that falls behind the code it measures fails here, not on the day someone
needs its figures. The benchmarks are found as the package's modules that define `SMOKE` (the
arguments of their smallest run), so a new one is covered without a change here."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

PACKAGE = "flotilla.plane.benchmarks"
# Run at its smallest, with more checked, by the file named.
ELSEWHERE = {"failover": "tests/e2e/test_bench_failover.py"}


def defines_smoke(path: Path) -> bool:
    """A benchmark, not one of their helpers: it assigns SMOKE at its top level."""
    return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SMOKE" for t in node.targets)
               for node in ast.parse(path.read_text()).body)


SCRIPTS = sorted(p.stem for p in (ROOT / PACKAGE.replace(".", "/")).glob("*.py") if defines_smoke(p))


def test_every_script_is_found() -> None:
    assert len(SCRIPTS) >= 7 and "member_health" in SCRIPTS
    assert not {"readyz_probe", "resources", "stats", "__init__"} & set(SCRIPTS)
    assert set(ELSEWHERE) <= set(SCRIPTS)
    for script, where in ELSEWHERE.items():
        text = (ROOT / where).read_text()
        assert f'"{PACKAGE}.{script}"' in text and '"--smoke"' in text, f"{where} no longer runs {script} --smoke"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in ELSEWHERE])
def test_the_script_runs_at_its_smallest_and_prints_json(script: str, tmp_path: Path) -> None:
    before = {p.pid for p in psutil.process_iter()}
    # TMPDIR: whatever the script keeps in a temporary directory (etcd's data, a plane) goes under
    # the test's own, by which what it left running is found.
    result = subprocess.run([sys.executable, "-m", f"{PACKAGE}.{script}", "--smoke"], cwd=ROOT,
                            capture_output=True, text=True, timeout=170, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout)
    assert isinstance(out, dict) and out
    left = [p for p in psutil.process_iter(["pid", "cmdline"]) if p.pid not in before
            and str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"still running: {left}"
