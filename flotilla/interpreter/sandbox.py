"""A sealed Lua 5.1 runtime that runs interpreter scripts under a time and a memory limit.

Karmada runs ResourceInterpreterCustomization scripts in gopher-lua, a Lua 5.1,
so this is lupa's Lua 5.1 too: the same scripts compile and behave the same.

One LuaSandbox holds one lupa runtime. Scripts never run in the runtime's
globals: each call builds a fresh environment holding only the safe base
functions and copies of `string`, `table` and `math`, so a script cannot reach
`io`, `os`, `debug`, `require` or the loaders, and nothing it leaves in its
globals survives into the next call. The dangerous globals are removed from
the runtime as well once the few functions the sandbox needs are captured.

Time is bounded by a count hook set from outside the sandbox: every
`_HOOK_INSTRUCTIONS` VM instructions it compares the wall clock with the
deadline and raises once it has passed. A single call into a C library
function is not interrupted (`string.find` with a backtracking pattern runs
for ages in one call): that is why the services run scripts only in the
worker processes of flotilla.interpreter.pool, which kills a worker that
overruns. The hook gives the ordinary endless loop a clean error and keeps
the worker; the kill is for what the hook cannot stop.

Results come back as JSON values tagged with their Lua type (`LuaValue`), so
one sandbox serves every interpreter operation, not only health.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lupa import lua51

from flotilla.interpreter.errors import InterpretationError, ScriptMemoryExceeded, ScriptTimeout

# Error positions read `luaScript:3: ...`, matching what admission reports.
CHUNK_NAME = "=luaScript"
DEFAULT_MEMORY_LIMIT = 64 * 2**20
# Far above any pattern a health script uses, far below the recursion depth
# (about one C frame per pattern item) that overflows a thread's stack.
MAX_PATTERN_LENGTH = 4096
# Long enough that the hook (a call out to Python's clock) costs about 1% of a
# busy loop, short enough that a loop is stopped within a millisecond.
_HOOK_INSTRUCTIONS = 10_000
# Error messages are cut to this many bytes: they end up in an Event.
_MAX_MESSAGE_BYTES = 512
_BYTECODE_SIGNATURE = "\x1bLua"
_MEMORY_MESSAGE = "not enough memory"
# Nesting of a table a script returns, far beyond any Kubernetes object; a
# deeper one is most likely cyclic or built to exhaust the converter.
MAX_RESULT_DEPTH = 100


class LuaValue(NamedTuple):
    """A value a script returned: its Lua type (`type(v)`) and its JSON form.

    nil, booleans, numbers, strings and tables of those convert; a function,
    thread or userdata returned as such keeps its type with no value (a caller
    reports it as the wrong type); held inside a table, it fails the call.
    """

    type: str
    value: Any

# Globals removed from the runtime after bootstrap. Scripts cannot see the
# runtime's globals anyway; removing these keeps a future mistake (running
# something in the global environment) from handing them out.
_SEALED_GLOBALS = (
    "collectgarbage", "coroutine", "debug", "dofile", "gcinfo", "getfenv", "io", "load", "loadfile",
    "loadstring", "module", "newproxy", "os", "package", "python", "require", "setfenv",
)

_BOOTSTRAP = r"""
local clock, max_pattern_length, max_message_bytes = ...

-- Captured before the globals are sealed. Scripts never see this scope.
local sethook, setfenv, loadstring = debug.sethook, setfenv, loadstring
local rawget, type, pairs, ipairs, pcall, error, select, unpack, tostring =
  rawget, type, pairs, ipairs, pcall, error, select, unpack, tostring

local deadline, expired = math.huge, false

local function hook()
  if expired or clock() > deadline then
    if not expired then
      expired = true
      -- From now on every instruction fails, so a script that catches the
      -- timeout with pcall is unwound one level per instruction instead of
      -- running on until the next count.
      sethook(hook, "", 1)
    end
    error("timeout", 0)
  end
end

local function arm(seconds)
  expired = false
  deadline = clock() + seconds
end

local function timed_out()
  return expired
end

-- Lua 5.1's matcher recurses once per pattern item with no depth limit (5.2
-- added one), so a long enough pattern overflows the C stack and kills the
-- process. Patched in the real string table so that method calls on strings
-- (`s:find(p)`, through the string metatable) are guarded too.
local function guard_pattern(name, match)
  return function(s, pattern, ...)
    if type(pattern) == "string" and #pattern > max_pattern_length then
      error("string." .. name .. ": pattern longer than " .. max_pattern_length .. " characters", 2)
    end
    return match(s, pattern, ...)
  end
end
for _, name in ipairs({"find", "match", "gmatch", "gsub", "gfind"}) do
  if string[name] then
    string[name] = guard_pattern(name, string[name])
  end
end
-- Bytecode is refused by compile(); dumping functions would only help someone trying.
string.dump = nil

local function pack(...)
  return {n = select("#", ...), ...}
end

-- Lua 5.1 runs an xpcall handler with hooks off when the error was raised by
-- a hook, so a handler that loops would outlive the time limit. Calling the
-- handler after pcall has unwound keeps it under the hook.
local function hooked_xpcall(f, handler)
  local results = pack(pcall(f))
  if results[1] then
    return unpack(results, 1, results.n)
  end
  local ok, value = pcall(handler, results[2])
  if not ok then
    value = "error in error handling"
  end
  return false, value
end

-- Karmada replaces these with functions that fail with a message; so does
-- this sandbox, so a ported script gets a clear error rather than
-- "attempt to call a nil value".
local function unavailable(name)
  return function()
    error(name .. " is not available to resource interpreter scripts", 2)
  end
end

local template = {
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, pcall = pcall,
  select = select, tonumber = tonumber, tostring = tostring, type = type, unpack = unpack,
  xpcall = hooked_xpcall, _VERSION = _VERSION,
  -- Scripts written for Karmada may print while debugging; here output has nowhere to go.
  print = function() end,
}
for _, name in ipairs({
  "collectgarbage", "dofile", "getfenv", "getmetatable", "load", "loadfile", "loadstring", "module",
  "newproxy", "rawequal", "rawget", "rawset", "require", "setfenv", "setmetatable",
}) do
  template[name] = unavailable(name)
end
local libraries = {string = string, table = table, math = math}

-- Karmada's `kube` module (require("kube")), which its own customizations use (FlinkDeployment's
-- GetReplicas compares memory quantities with it). getResourceQuantity is Kubernetes'
-- Quantity.AsApproximateFloat64: "2Gi" -> 2147483648, "500m" -> 0.5; a number is itself.
local quantity_suffixes = {
  [""] = 1, n = 1e-9, u = 1e-6, m = 1e-3, k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18,
  Ki = 2^10, Mi = 2^20, Gi = 2^30, Ti = 2^40, Pi = 2^50, Ei = 2^60,
}
local match, tonumber = string.match, tonumber
local function get_resource_quantity(value)
  if type(value) == "number" then
    return value
  end
  if type(value) ~= "string" then
    error("getResourceQuantity: a quantity is a string or a number, not a " .. type(value), 2)
  end
  local number, suffix = match(value, "^([+-]?[0-9]*%.?[0-9]*)(.*)$")
  local amount = number and tonumber(number)
  local scale = quantity_suffixes[suffix or ""]
  if scale == nil and suffix ~= nil then
    local exponent = match(suffix, "^[eE]([+-]?[0-9]+)$")
    scale = exponent and 10 ^ tonumber(exponent)
  end
  if amount == nil or scale == nil then
    error("getResourceQuantity: quantities must match the regular expression " ..
          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got " .. value, 2)
  end
  return amount * scale
end
-- A fresh table per require, so nothing a script sets in it reaches the next call.
local modules = {kube = function() return {getResourceQuantity = get_resource_quantity} end}
template.require = function(name)
  local module = modules[name]
  if module == nil then
    error("require is not available to resource interpreter scripts, but for require(\"kube\")", 2)
  end
  return module()
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do
    c[k] = v
  end
  return c
end

local function new_env()
  local env = copy(template)
  for name, library in pairs(libraries) do
    env[name] = copy(library)
  end
  env._G = env
  return env
end

-- lupa decodes strings it hands to Python as UTF-8 and fails on anything
-- else; Lua messages can hold any byte (the lexer quotes half a character), so
-- messages travel as byte lists and Python decodes them leniently.
local function message_bytes(message)
  local text = tostring(message)
  if #text > max_message_bytes then
    text = text:sub(1, max_message_bytes)
  end
  return {text:byte(1, -1)}
end

local function compile(source, chunk_name)
  local chunk, message = loadstring(source, chunk_name)
  if chunk then
    return chunk, nil
  end
  return nil, message_bytes(message)
end

-- Karmada's convention: run the script, then call the named function with
-- the arguments. Every return value is kept, with its type; the caller picks.
local function run(chunk, name, ...)
  local env = new_env()
  setfenv(chunk, env)
  chunk()
  local fn = rawget(env, name)
  if fn == nil then
    error("script does not define function " .. name, 0)
  end
  if type(fn) ~= "function" then
    error(name .. " is a " .. type(fn) .. ", not a function", 0)
  end
  local results = pack(fn(...))
  -- Type names as Lua gives them: lupa's own do not tell every kind apart.
  local types = {}
  for i = 1, results.n do
    types[i] = type(results[i])
  end
  return results, types
end

local function call(chunk, name, ...)
  local ok, results, types = pcall(run, chunk, name, ...)
  if ok then
    return "ok", results, types
  end
  return "error", message_bytes(results)
end

return compile, call, arm, hook, timed_out
"""


class LuaSandbox:
    """One sealed runtime. Thread-safe: calls are serialized, each bounded by its timeout."""

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> None:
        self.memory_limit = memory_limit
        self._lock = threading.Lock()
        self._runtime = lua51.LuaRuntime(
            register_eval=False,
            register_builtins=False,
            attribute_filter=_deny_attribute,
            max_memory=memory_limit,
        )
        lua_globals = self._runtime.globals()
        self._sethook = lua_globals.debug.sethook
        self._compile, self._call, self._arm, self._hook, self._timed_out = self._runtime.execute(
            _BOOTSTRAP, time.monotonic, MAX_PATTERN_LENGTH, _MAX_MESSAGE_BYTES
        )
        for name in _SEALED_GLOBALS:
            lua_globals[name] = None

    def compile(self, script: str) -> Any:
        """The compiled chunk; InterpretationError with the compiler's message if it does not compile."""
        if script.startswith(_BYTECODE_SIGNATURE):
            # loadstring would accept a precompiled chunk, which gopher-lua
            # cannot run and which can crash a stock Lua VM when loaded.
            raise InterpretationError("precompiled Lua bytecode is not accepted; provide Lua source")
        with self._lock:
            try:
                chunk, message = self._compile(script, CHUNK_NAME)
            except lua51.LuaMemoryError as error:
                raise self._memory_exceeded() from error
        if chunk is None:
            raise InterpretationError(_decode(message))
        return chunk

    def call(self, chunk: Any, function_name: str, arguments: Sequence[Any],
             timeout: float) -> tuple[LuaValue, ...]:
        """Run the chunk, then `function_name(*arguments)`: every value it returns.

        Each argument is a JSON value; objects reach the script as nested
        tables (lists 1-indexed, JSON null as nil). Any failure, including
        running past `timeout` seconds, raises InterpretationError.
        """
        for argument in arguments:
            check_json(argument)
        with self._lock:
            try:
                lua_arguments = [self._runtime.table_from(argument, recursive=True)
                                 if isinstance(argument, Mapping | list | tuple) else argument
                                 for argument in arguments]
            except lua51.LuaMemoryError as error:
                raise self._memory_exceeded() from error
            except OverflowError as error:
                raise InterpretationError("object holds an integer too large for a Lua number") from error
            escaped: lua51.LuaError | None = None
            self._arm(timeout)
            self._sethook(self._hook, "", _HOOK_INSTRUCTIONS)
            try:
                returned = self._call(chunk, function_name, *lua_arguments)
            except lua51.LuaError as error:
                # Once the deadline passed the hook fails every instruction,
                # including those after the script's own pcall has returned.
                escaped = error
            finally:
                self._sethook()
            if self._timed_out():
                raise ScriptTimeout(timeout_message(timeout))
            if isinstance(escaped, lua51.LuaMemoryError):
                raise self._memory_exceeded() from escaped
            if escaped is not None:
                raise InterpretationError(_one_line(str(escaped))) from escaped
            kind, value = returned[0], returned[1]
            if kind == "error":
                message = _decode(value)
                if message == _MEMORY_MESSAGE:
                    raise self._memory_exceeded()
                raise InterpretationError(message)
            return _results(function_name, value, returned[2])

    def _memory_exceeded(self) -> InterpretationError:
        # Lua 5.1 has no emergency collection: without a full cycle now the
        # garbage of the failed call could make the next allocation fail too.
        self._runtime.gccollect()
        return ScriptMemoryExceeded(f"Lua memory limit of {self.memory_limit // 2**20} MiB exceeded")


def timeout_message(timeout: float) -> str:
    """What a call that ran out of time reports, whether the hook or the pool stopped it."""
    return f"Lua script exceeded its time limit of {timeout:g}s"


def _deny_attribute(obj: object, name: object, is_setting: bool) -> object:
    # No Python object is reachable from a script; this is the second lock on
    # that door (attribute access on a wrapped object reaches Python internals).
    raise AttributeError("Python attributes are not accessible from Lua")


def check_json(value: Any) -> None:
    """Refuse anything but JSON values: lupa would hand other objects to Lua as live Python objects."""
    seen: set[int] = set()
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise InterpretationError(f"object has a non-string key {key!r}")
                    pending.append(child)
            else:
                pending.extend(item)
        elif not isinstance(item, str | int | float | bool) and item is not None:
            raise InterpretationError(f"object holds a Python {type(item).__name__!r}, not a JSON value")


def _results(function_name: str, values: Any, types: Any) -> tuple[LuaValue, ...]:
    results = []
    for index in range(1, values["n"] + 1):
        lua_type = types[index]
        where = f"{function_name} return value {index}"
        if lua_type in _OPAQUE_TYPES:
            results.append(LuaValue(lua_type, None))
            continue
        try:
            results.append(LuaValue(lua_type, _to_json(values[index], where, 0)))
        except UnicodeDecodeError as error:
            raise InterpretationError(f"{where} holds a string that is not UTF-8") from error
    return tuple(results)


_OPAQUE_TYPES = frozenset({"function", "thread", "userdata"})


def _to_json(value: Any, where: str, depth: int) -> Any:
    """A Lua value as JSON: a table with keys 1..n is a list, any other table an object."""
    kind = lua51.lua_type(value)
    if kind is None:
        return value  # nil, boolean, number or string: lupa gave the Python value
    if kind != "table":
        raise InterpretationError(f"{where} holds a {kind}, not a JSON value")
    if depth >= MAX_RESULT_DEPTH:
        # lupa wraps a table anew at each access, so a cycle shows only as depth.
        raise InterpretationError(f"{where} nests tables deeper than {MAX_RESULT_DEPTH} (or contains itself)")
    items = [(key, _to_json(item, where, depth + 1)) for key, item in value.items()]
    keys = [key for key, _ in items]
    if items and all(type(key) is int for key in keys) and sorted(keys) == list(range(1, len(items) + 1)):
        return [item for _, item in sorted(items, key=lambda pair: pair[0])]
    result: dict[str, Any] = {}
    for key, item in items:
        if isinstance(key, bool) or not isinstance(key, str | int | float):
            key_type = "boolean" if isinstance(key, bool) else lua51.lua_type(key) or type(key).__name__
            raise InterpretationError(f"{where} holds a table keyed by a {key_type}")
        result[key if isinstance(key, str) else _number_key(key)] = item
    return result


def _number_key(key: int | float) -> str:
    # As Lua's tostring writes it: 1 not 1.0.
    return str(int(key)) if float(key).is_integer() else repr(key)


def _decode(message_bytes: Any) -> str:
    raw = bytes(message_bytes[index] for index in range(1, len(message_bytes) + 1))
    return _one_line(raw.decode("utf-8", errors="replace"))


def _one_line(message: str) -> str:
    return " ".join(message.split())
