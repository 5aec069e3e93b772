#!/usr/bin/env python3
"""Generate flotilla/api/v1 from protos/flotilla/v1 (`--check`: fail when it is stale).

protoc names the Python package after the proto path (`flotilla.v1`); the
generated modules live in `flotilla.api.v1`, so their cross-file imports are
rewritten. The output depends only on the .proto files and the grpcio-tools
version, so the committed files can be compared byte for byte.
"""

from __future__ import annotations

import argparse
import importlib.resources
import re
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PROTO_DIR = PROTO_ROOT / "flotilla" / "v1"
OUT_DIR = ROOT / "flotilla" / "api" / "v1"

INIT_TEXT = '"""Messages generated from protos/flotilla/v1 by scripts/gen_protos.py. Do not edit."""\n'
IMPORT_FROM = re.compile(r"^from flotilla\.v1 import ", re.MULTILINE)
# The builder stamps this module path on every generated class (__module__).
MODULE_NAME = re.compile(r"'flotilla\.v1\.(\w+_pb2)'")
SERVICE = re.compile(r"^\s*service\s+\w+", re.MULTILINE)
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def _well_known_include() -> str:
    # grpc_tools ships google/protobuf/*.proto (timestamp.proto) beside its protoc.
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _proto_files() -> list[Path]:
    return sorted(PROTO_DIR.glob("*.proto"))


def generate(out_dir: Path) -> None:
    """Write __init__.py and the generated modules for every proto into out_dir."""
    protos = _proto_files()
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_DIR.relative_to(ROOT)}")
    with tempfile.TemporaryDirectory() as raw:
        raw_dir = Path(raw)
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{_well_known_include()}",
            f"--python_out={raw_dir}",
            f"--pyi_out={raw_dir}",
            f"--grpc_python_out={raw_dir}",
            *(str(p.relative_to(PROTO_ROOT)) for p in protos),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "__init__.py").write_text(INIT_TEXT)
        for proto in protos:
            stem = proto.stem
            names = [f"{stem}_pb2.py", f"{stem}_pb2.pyi"]
            # grpc_python_out writes a stub for every file; only service files need one.
            if SERVICE.search(proto.read_text()):
                names.append(f"{stem}_pb2_grpc.py")
            for name in names:
                text = (raw_dir / "flotilla" / "v1" / name).read_text()
                text = IMPORT_FROM.sub("from flotilla.api.v1 import ", text)
                (out_dir / name).write_text(MODULE_NAME.sub(r"'flotilla.api.v1.\1'", text))


def _managed_files(directory: Path) -> dict[str, bytes]:
    if not directory.is_dir():
        return {}
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and (p.name == "__init__.py" or p.name.endswith(GENERATED_SUFFIXES))
    }


def _fresh() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        fresh_dir = Path(tmp) / "v1"
        generate(fresh_dir)
        return _managed_files(fresh_dir)


def stale_files() -> list[str]:
    """Paths (relative to the repo) that differ from a fresh generation, are missing, or are extra."""
    fresh = _fresh()
    committed = _managed_files(OUT_DIR)
    rel = OUT_DIR.relative_to(ROOT)
    names = sorted(fresh.keys() | committed.keys())
    return [str(rel / name) for name in names if fresh.get(name) != committed.get(name)]


def write() -> None:
    fresh = _fresh()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name in _managed_files(OUT_DIR).keys() - fresh.keys():
        # Modules of a deleted .proto would otherwise linger and still import.
        (OUT_DIR / name).unlink()
    for name, content in fresh.items():
        (OUT_DIR / name).write_bytes(content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed files are stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        if stale:
            print(f"generated code is stale, run scripts/gen_protos.py: {', '.join(stale)}")
            return 1
        return 0
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
