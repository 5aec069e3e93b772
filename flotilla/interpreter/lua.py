"""ResourceInterpreterCustomization health scripts: Karmada's `InterpretHealth(observedObj)` convention."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.sandbox import LuaSandbox

HEALTH_FUNCTION = "InterpretHealth"
DEFAULT_TIMEOUT = 1.0  # seconds, as Karmada's Lua VM allows each call


def lua_compile_error(script: str) -> str | None:
    """The compiler's message (`luaScript:2: 'end' expected near '<eof>'`), or None when it compiles.

    Nothing in the script runs. Admission uses this to refuse a customization
    that would fail every interpretation of its kind.
    """
    try:
        # A fresh sandbox per call: runtimes are not shared across threads and cost well under a millisecond.
        LuaSandbox().compile(script)
    except InterpretationError as error:
        return str(error)
    return None


class LuaHealthScript:
    """One customization's health script, compiled once and run in its own sandbox.

    Karmada runs the whole script for every call; so does this, in a fresh
    environment each time, so a script keeps no state between objects.
    """

    def __init__(self, script: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.script = script
        self.timeout = timeout
        self._sandbox = LuaSandbox()
        try:
            self._chunk = self._sandbox.compile(script)
        except InterpretationError as error:
            raise InterpretationError(f"Lua script does not compile: {error}") from error

    def interpret(self, observed: Mapping[str, Any]) -> bool:
        """`InterpretHealth(observed)`: True for healthy; InterpretationError if it fails or returns a non-boolean."""
        kind, value = self._sandbox.call(self._chunk, HEALTH_FUNCTION, observed, self.timeout)
        if kind != "boolean":
            raise InterpretationError(f"{HEALTH_FUNCTION} returned a {kind}, not a boolean")
        return bool(value)
