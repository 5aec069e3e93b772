"""Resource interpretation: how healthy a member object is (docs/karmada-rules.md §13)."""

from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.health import HEALTHY, UNHEALTHY, UNKNOWN, HealthInterpreter, HealthResult
from flotilla.interpreter.lua import DEFAULT_TIMEOUT, LuaHealthScript, lua_compile_error
from flotilla.interpreter.native import native_health_rule
from flotilla.interpreter.pool import CallResult, PoolClosed, ScriptPool, ScriptRunner

__all__ = [
    "DEFAULT_TIMEOUT",
    "HEALTHY",
    "UNHEALTHY",
    "UNKNOWN",
    "CallResult",
    "HealthInterpreter",
    "HealthResult",
    "InterpretationError",
    "LuaHealthScript",
    "PoolClosed",
    "ScriptPool",
    "ScriptRunner",
    "lua_compile_error",
    "native_health_rule",
]
