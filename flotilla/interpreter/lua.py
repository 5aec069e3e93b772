"""ResourceInterpreterCustomization health scripts: Karmada's `InterpretHealth(observedObj)` convention."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.sandbox import LuaSandbox, LuaValue

HEALTH_FUNCTION = "InterpretHealth"
# Seconds a call may run. Karmada bounds each call too; a health script reads a few fields and
# answers in microseconds, so a tenth of a second is plenty, and it is what one object's
# runaway script costs before its worker is stopped.
DEFAULT_TIMEOUT = 0.1


def lua_compile_error(script: str) -> str | None:
    """The compiler's message (`luaScript:2: 'end' expected near '<eof>'`), or None when it compiles.

    Nothing in the script runs. Admission uses this to refuse a customization
    that would fail every interpretation of its kind; the health interpreter,
    to know such a rule without asking a worker.
    """
    try:
        # A fresh sandbox per call: runtimes are not shared across threads and cost well under a millisecond.
        LuaSandbox().compile(script)
    except InterpretationError as error:
        return str(error)
    return None


def compile_failure(message: str) -> str:
    """How a call of a script that does not compile fails: the same words in the worker and here."""
    return f"Lua script does not compile: {message}"


def health_of(values: Sequence[LuaValue]) -> bool:
    """`InterpretHealth`'s verdict from its return values: only the first counts, and it must be a boolean."""
    first = values[0] if values else LuaValue("nil", None)
    if first.type != "boolean":
        raise InterpretationError(f"{HEALTH_FUNCTION} returned a {first.type}, not a boolean")
    return bool(first.value)


class LuaHealthScript:
    """One health script compiled once and run in this process, in its own sandbox.

    Nothing here stops a script stuck in one call into the Lua library: the
    services run scripts through flotilla.interpreter.pool instead. This is
    the in-process form for tools and tests that trust the script.

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
            raise InterpretationError(compile_failure(str(error))) from error

    def interpret(self, observed: Mapping[str, Any]) -> bool:
        """`InterpretHealth(observed)`: True for healthy; InterpretationError if it fails or returns a non-boolean."""
        return health_of(self._sandbox.call(self._chunk, HEALTH_FUNCTION, [observed], self.timeout))
