"""Does a ResourceInterpreterCustomization script compile? Checked without running it.

The check lives with the interpreter that runs the scripts, so admission
refuses exactly what the interpreter could not compile (Lua 5.1, as Karmada's
gopher-lua: `goto`, `//` and bitwise operators are refused; bytecode too).
"""

from __future__ import annotations

from flotilla.interpreter.lua import lua_compile_error

__all__ = ["lua_compile_error"]
