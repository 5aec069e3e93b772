"""Does a ResourceInterpreterCustomization script compile? Checked without running it."""

from __future__ import annotations

from lupa import lua51

# Karmada runs these scripts in gopher-lua, a Lua 5.1: compiling with 5.1
# rejects what Karmada would (`goto`, `//`, bitwise operators) and accepts
# what it accepts.
_CHUNK_NAME = "=luaScript"
_BYTECODE_SIGNATURE = "\x1bLua"


def lua_compile_error(script: str) -> str | None:
    """The compiler's message (`luaScript:2: 'end' expected near '<eof>'`), or None when it compiles."""
    if script.startswith(_BYTECODE_SIGNATURE):
        # loadstring would accept a precompiled chunk, which gopher-lua cannot
        # run and which can crash a stock Lua VM when loaded.
        return "precompiled Lua bytecode is not accepted; provide Lua source"
    # A fresh runtime per call: runtimes are not thread-safe and cost microseconds.
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    result = runtime.globals().loadstring(script, _CHUNK_NAME)
    # loadstring returns the compiled chunk, or (nil, message); the chunk is never called.
    if isinstance(result, tuple):
        return str(result[1])
    return None
