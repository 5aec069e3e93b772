"""Layering: the library `flotilla/` imports no service and no simulator, and the store sits below
the runtime except for the clock. Checked statically with `ast`, so an import inside a function
(the CLI loads heavy code lazily) counts the same as one at the top of a module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "flotilla"

# Top-level packages the library must never import.
FORBIDDEN = ("services", "sim")

# (importing module, imported name) pairs allowed to break the rule above, each to be removed.
# Empty: `flotilla up` starts the simulator as a process (`python -m sim`) and drives it over
# HTTP with flotilla.simclient; a new entry needs a reason as good as that one was not.
FORBIDDEN_ALLOWED: set[tuple[str, str]] = set()

# What the store may import from the runtime: the Clock and `cancel_and_wait`, nothing else.
# The store stamps objects and measures leases with the runtime's Clock (flotilla/store/
# objects.py, memory.py), and stops its lease keepers with flotilla/runtime/tasks.py. Both are
# leaf modules that import only the standard library, and flotilla/runtime/__init__.py imports
# nothing (test_importing_the_store_loads_only_the_runtimes_leaves); moving Clock would touch
# some sixty importers.
STORE_RUNTIME_ALLOWED = ("flotilla.aio.clock", "flotilla.aio.tasks")


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


def test_allow_list_entries_are_still_needed() -> None:
    imports = all_imports()
    unneeded = sorted((module, name) for module, name in FORBIDDEN_ALLOWED if name not in imports.get(module, set()))
    assert not unneeded, "no longer imported: delete from FORBIDDEN_ALLOWED:\n" + "\n".join(
        f"  {module} -> {name}" for module, name in unneeded)


def test_store_imports_only_the_clock_from_the_runtime() -> None:
    violations = sorted(
        (module, name)
        for module, names in all_imports().items() if under(module, "flotilla.store")
        for name in names
        if under(name, "flotilla.runtime") and not any(under(name, ok) for ok in STORE_RUNTIME_ALLOWED)
    )
    assert not violations, "flotilla.store may import only the clock and tasks from the runtime:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in violations)


def test_the_clock_is_a_leaf() -> None:
    names = all_imports()
    assert not [n for n in names["flotilla.aio.clock"] if under(n, "flotilla")]
    assert not names["flotilla.runtime"], "flotilla/runtime/__init__.py must stay import-free: the store loads it"


def test_importing_the_store_loads_only_the_runtimes_leaves() -> None:
    """The static rule above, checked at run time: what `import flotilla.store` actually loads."""
    code = ("import sys, flotilla.store, flotilla.store.connect, flotilla.store.embedded, flotilla.store.leader; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('flotilla', 'services', 'sim'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert {m for m in loaded if under(m, "flotilla.runtime")} <= {"flotilla.runtime", *STORE_RUNTIME_ALLOWED}
    assert not [m for m in loaded if not under(m, "flotilla")]
