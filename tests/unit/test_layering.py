"""Layering: the library `flotilla/` imports no service and no simulator, and the store sits below
the runtime except for the clock. Checked statically with `ast`, so an import inside a function
(the CLI loads heavy code lazily) counts the same as one at the top of a module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "flotilla"

# Top-level packages the library must never import.
FORBIDDEN = ("services", "sim")

# (importing module, imported name) pairs allowed to break the rule above, each to be removed.
FORBIDDEN_ALLOWED = {
    # TO BE REMOVED: `flotilla up` drives the simulator's admin API from flotilla/local.py, which
    # another change is moving out of the library. The lead deletes this entry once that lands.
    ("flotilla.local", "sim.admin"),
}

# What the store may import from the runtime. The store reads time through the runtime's Clock
# (flotilla/store/objects.py); nothing else of the runtime belongs below the store. The lead may
# tighten this (e.g. to nothing, once Clock lives elsewhere).
STORE_RUNTIME_ALLOWED = ("flotilla.runtime.clock",)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def library_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(LIBRARY.rglob("*.py"))}


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module or name `source` imports, anywhere in it, as a dotted absolute name.
    `from a.b import c` yields `a.b.c` (c may be a module or a name in a.b; both lie under a.b).
    Calls `importlib.import_module("x")` / `__import__("x")` with a literal name count too."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.update(f"{base}.{alias.name}" if alias.name != "*" else base for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def all_imports() -> dict[str, set[str]]:
    return {
        module: imports_of(path.read_text(), module, path.name == "__init__.py")
        for module, path in library_modules().items()
    }


def test_the_collector_sees_function_local_and_relative_imports() -> None:
    source = (
        "import os\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "def f():\n"
        "    from services.x import y\n"
        "    import sim.admin\n"
        "    importlib.import_module('services.z')\n"
    )
    assert imports_of(source, "flotilla.a.b") == {
        "os", "flotilla.a.sibling", "flotilla.other.thing", "services.x.y", "sim.admin", "services.z",
    }
    assert "flotilla.a.b.c.d" in imports_of("from .c import d\n", "flotilla.a.b", is_package=True)


def test_walk_covers_the_library() -> None:
    modules = library_modules()
    for expected in ("flotilla.scheduling", "flotilla.scheduler.core", "flotilla.scheduler.plugins",
                     "flotilla.store.objects", "flotilla.cli.schedule"):
        assert expected in modules


def test_library_imports_no_service_or_simulator() -> None:
    violations = sorted(
        (module, name)
        for module, names in all_imports().items()
        for name in names
        if any(under(name, top) for top in FORBIDDEN) and (module, name) not in FORBIDDEN_ALLOWED
    )
    assert not violations, "flotilla/ must not import services or sim:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in violations)


@pytest.mark.parametrize("allowed", sorted(FORBIDDEN_ALLOWED))
def test_allow_list_entries_are_still_needed(allowed: tuple[str, str]) -> None:
    module, name = allowed
    assert name in all_imports().get(module, set()), (
        f"{module} no longer imports {name}: delete its entry from FORBIDDEN_ALLOWED")


def test_store_imports_only_the_clock_from_the_runtime() -> None:
    violations = sorted(
        (module, name)
        for module, names in all_imports().items() if under(module, "flotilla.store")
        for name in names
        if under(name, "flotilla.runtime") and not any(under(name, ok) for ok in STORE_RUNTIME_ALLOWED)
    )
    assert not violations, "flotilla.store may import only flotilla.runtime.clock from the runtime:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in violations)
