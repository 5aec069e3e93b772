"""The committed flotilla/api/v1 modules are what scripts/gen_protos.py generates now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_fresh() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_package_imports_under_flotilla_api() -> None:
    from flotilla.api.v1 import cluster_pb2, work_pb2

    assert work_pb2.ResourceBinding.__module__ == "flotilla.api.v1.work_pb2"
    assert cluster_pb2.Cluster.DESCRIPTOR.file.name == "flotilla/v1/cluster.proto"
