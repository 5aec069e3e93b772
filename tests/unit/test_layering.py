"""Layering: what the import-linter contracts in pyproject.toml (`lint-imports`, run by `make test`)
cannot say. The contracts hold the floors (aio -> api -> security -> store | member -> runtime ->
rules | interpreter -> scheduler | clusterstatus -> services), that the library imports no service
and no simulator, and that the services are independent; they count imports inside functions and
under `if TYPE_CHECKING` as any other. Checked here: imports by a literal name through
`importlib.import_module("x")` / `__import__("x")`, which import-linter does not see; that
flotilla/aio/ uses the standard library only; and, at run time, what `import flotilla.store`
actually loads."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "flotilla"

# Top-level packages the library must never import.
FORBIDDEN = ("services", "sim")


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
    return static_imports_of(source, module, is_package) | dynamic_imports_of(source)


def static_imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
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
    return found


def dynamic_imports_of(source: str) -> set[str]:
    """The modules `source` imports by calling `import_module` or `__import__` with a literal name:
    import-linter does not see these."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_collector_sees_function_local_relative_and_dynamic_imports() -> None:
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
    assert dynamic_imports_of(source) == {"services.z"}
    assert "flotilla.a.b.c.d" in imports_of("from .c import d\n", "flotilla.a.b", is_package=True)


def test_walk_covers_the_library() -> None:
    modules = library_modules()
    for expected in ("flotilla.scheduler.plugin_api", "flotilla.scheduler.core", "flotilla.scheduler.plugins",
                     "flotilla.store.objects", "flotilla.cli.schedule", "flotilla.aio.clock", "flotilla.api.events"):
        assert expected in modules


def test_library_imports_no_service_or_simulator_by_name() -> None:
    """The `library` contract's rule, for the imports import-linter does not see."""
    violations = sorted(
        (module, name)
        for module, path in library_modules().items()
        for name in dynamic_imports_of(path.read_text())
        if any(under(name, top) for top in FORBIDDEN)
    )
    assert not violations, "flotilla/ must not import services or sim:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in violations)


def test_aio_uses_the_standard_library_only() -> None:
    """flotilla/aio/ is the bottom floor: every other floor may use it, so it uses nothing but the
    standard library (the layers contract only keeps it from importing the floors above it)."""
    violations = sorted(
        (module, name)
        for module, path in library_modules().items() if under(module, "flotilla.aio")
        for name in imports_of(path.read_text(), module, path.name == "__init__.py")
        if name.split(".")[0] not in sys.stdlib_module_names | {"__future__"}
    )
    assert not violations, "flotilla/aio/ may import the standard library only:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in violations)


def test_importing_the_store_loads_nothing_above_it() -> None:
    """The layers contract, checked at run time: what `import flotilla.store` actually loads."""
    code = ("import sys, flotilla.store, flotilla.store.connect, flotilla.store.embedded, flotilla.store.leader; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('flotilla', 'services', 'sim'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert not [m for m in loaded if under(m, "flotilla.runtime") or under(m, "flotilla.member")]
    assert not [m for m in loaded if not under(m, "flotilla")]
