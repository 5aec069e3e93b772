"""ResourceInterpreterCustomization health scripts: convention, sandbox, time limit, precedence."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.interpreter import (
    DEFAULT_TIMEOUT,
    HEALTHY,
    UNHEALTHY,
    UNKNOWN,
    HealthInterpreter,
    HealthResult,
    InterpretationError,
    LuaHealthScript,
    lua_compile_error,
)
from flotilla.interpreter import health as health_module
from services.webhook.rules.lua import lua_compile_error as admission_compile_error
from tests.factories import EXAMPLES_DIR

SHORT = 0.2  # seconds: the time limit in tests that loop forever


def seed_customization() -> ResourceInterpreterCustomization:
    (document,) = codec.load_yaml_documents((EXAMPLES_DIR / "health-interpreter.yaml").read_text())
    customization = codec.from_dict(document)
    assert isinstance(customization, ResourceInterpreterCustomization)
    return customization


def ric(name: str, script: str, api_version: str = "apps/v1", kind: str = "Deployment") -> \
        ResourceInterpreterCustomization:
    return ResourceInterpreterCustomization(
        api_version="config.karmada.io/v1alpha1",
        kind="ResourceInterpreterCustomization",
        metadata={"name": name},
        spec={"target": {"api_version": api_version, "kind": kind},
              "customizations": {"health_interpretation": {"lua_script": script}}},
    )


def health_script(body: str) -> str:
    return f"function InterpretHealth(observedObj)\n{body}\nend\n"


def deployment(replicas: int = 3, ready: int | None = 3, **status: Any) -> dict[str, Any]:
    # Natively healthy whatever `ready` is: generation observed, all updated and available.
    full_status: dict[str, Any] = {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                                   "availableReplicas": replicas, **status}
    if ready is not None:
        full_status["readyReplicas"] = ready
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}}}, "status": full_status}


def interpret_with(script: str, obj: dict[str, Any] | None = None, timeout: float = 1.0) -> HealthResult:
    interpreter = HealthInterpreter([ric("custom", script)], timeout=timeout)
    return interpreter.interpret(deployment() if obj is None else obj)


# --- the seed customization -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (deployment(3, 3), HEALTHY),
        (deployment(3, 2), UNHEALTHY),
        (deployment(3, None), UNHEALTHY),  # no readyReplicas: nil ~= 3
        (deployment(0, None), UNHEALTHY),  # nil ~= 0: the script compares, it does not default
        (deployment(0, 0), HEALTHY),
    ],
    ids=["all-ready", "one-not-ready", "ready-missing", "zero-ready-missing", "zero"],
)
def test_seed_customization(obj: dict[str, Any], expected: str) -> None:
    interpreter = HealthInterpreter([seed_customization()])
    assert interpreter.interpret(obj) == HealthResult(expected)


def test_seed_customization_overrides_native_rule() -> None:
    interpreter = HealthInterpreter([seed_customization()])
    natively_healthy = deployment(3, 1)
    assert HealthInterpreter().interpret(natively_healthy).health == HEALTHY
    assert interpreter.interpret(natively_healthy).health == UNHEALTHY


# --- calling convention ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("return 1", "number"),
        ("return 'true'", "string"),
        ("return {}", "table"),
        ("return nil", "nil"),
        ("local x = 1", "nil"),  # no return value at all
        ("return observedObj.status.missing", "nil"),
        ("return InterpretHealth", "function"),
    ],
)
def test_non_boolean_return_is_unknown(body: str, kind: str) -> None:
    result = interpret_with(health_script(body))
    assert result == HealthResult(UNKNOWN, f"InterpretHealth returned a {kind}, not a boolean")


def test_only_the_first_return_value_counts() -> None:
    assert interpret_with(health_script("return false, 'ignored'")).health == UNHEALTHY
    assert interpret_with(health_script("return 'x', true")).health == UNKNOWN


def test_runtime_error_is_unknown_with_position() -> None:
    result = interpret_with(health_script("  return observedObj.spec.template.spec.containers[1].name == 'x'"))
    assert result.health == UNKNOWN
    assert result.error == "luaScript:2: attempt to index field 'template' (a nil value)"


def test_error_call_is_unknown() -> None:
    assert interpret_with(health_script("error('cannot decide')")) == HealthResult(
        UNKNOWN, "luaScript:2: cannot decide")
    assert interpret_with(health_script("error({})")).error.startswith("table: ")


def test_error_message_is_one_line_and_bounded() -> None:
    result = interpret_with(health_script("error('first\\nsecond ' .. string.rep('x', 5000), 0)"))
    assert result.health == UNKNOWN
    assert "\n" not in result.error and result.error.startswith("first second xxx")
    assert len(result.error) <= 512


def test_non_utf8_error_message_is_decoded_leniently() -> None:
    result = interpret_with(health_script("error('bad ' .. string.char(255), 0)"))
    assert result == HealthResult(UNKNOWN, "bad \ufffd")


def test_missing_function_is_unknown() -> None:
    assert interpret_with("function interpretHealth(o) return true end") == HealthResult(
        UNKNOWN, "script does not define function InterpretHealth")
    assert interpret_with("InterpretHealth = true") == HealthResult(
        UNKNOWN, "InterpretHealth is a boolean, not a function")


def test_top_level_error_is_unknown() -> None:
    result = interpret_with("error('at load')\n" + health_script("return true"))
    assert result == HealthResult(UNKNOWN, "luaScript:1: at load")


def test_compile_error_is_unknown_and_still_a_rule() -> None:
    interpreter = HealthInterpreter([ric("broken", "function InterpretHealth(o)\n  return true\n")])
    assert interpreter.has_rule("apps/v1", "Deployment")
    result = interpreter.interpret(deployment())
    assert result.health == UNKNOWN
    assert result.error == "Lua script does not compile: luaScript:3: 'end' expected (to close 'function' at " \
                           "line 1) near '<eof>'"


def test_lua_health_script_raises() -> None:
    with pytest.raises(InterpretationError, match=r"^Lua script does not compile: luaScript:1:"):
        LuaHealthScript("function InterpretHealth(o)")
    script = LuaHealthScript(health_script("return observedObj.spec.replicas"))
    with pytest.raises(InterpretationError, match=r"^InterpretHealth returned a number, not a boolean$"):
        script.interpret(deployment())
    assert LuaHealthScript(health_script("return observedObj.spec.replicas == 3")).interpret(deployment()) is True


def test_lua_51_only() -> None:
    # gopher-lua is Lua 5.1: integer division is a syntax error there.
    assert interpret_with(health_script("return observedObj.spec.replicas // 2 == 1")).error.startswith(
        "Lua script does not compile: luaScript:2:")


# --- the object as Lua sees it -------------------------------------------------------------------


def test_object_conversion() -> None:
    obj = deployment()
    obj["spec"]["template"] = {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]},
                                                       {"name": "b"}]}}
    obj["spec"]["paused"] = False
    obj["metadata"]["annotations"] = {"note": None, "owner": "ops"}
    obj["status"]["conditions"] = [{"type": "Available", "status": "True"}]
    script = health_script("""
      local spec = observedObj.spec
      local containers = spec.template.spec.containers
      return #containers == 2 and containers[1].name == "a" and containers[2].name == "b"
        and containers[0] == nil
        and containers[1].ports[1].containerPort + 1 == 81
        and spec.paused == false and type(spec.paused) == "boolean"
        and observedObj.metadata.annotations.note == nil
        and observedObj.metadata.annotations.owner == "ops"
        and observedObj.status.conditions[1].status == "True"
        and type(spec.replicas) == "number" and spec.replicas * 2 == 6
        and observedObj.nothing == nil
    """)
    assert interpret_with(script, obj) == HealthResult(HEALTHY)


def test_script_changes_to_the_object_do_not_reach_python() -> None:
    obj = deployment()
    assert interpret_with(health_script("observedObj.spec.replicas = 99 return true"), obj).health == HEALTHY
    assert obj["spec"]["replicas"] == 3


def test_non_json_object_is_unknown() -> None:
    obj = deployment()
    obj["metadata"]["annotations"] = {"when": object()}
    result = interpret_with(health_script("return true"), obj)
    assert result == HealthResult(UNKNOWN, "object holds a Python 'object', not a JSON value")


# --- sandbox ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("os.exit(1)", "attempt to index global 'os' (a nil value)"),
        ("io.open('/etc/passwd')", "attempt to index global 'io' (a nil value)"),
        ("debug.sethook()", "attempt to index global 'debug' (a nil value)"),
        ("package.loadlib('x', 'y')", "attempt to index global 'package' (a nil value)"),
        ("coroutine.create(print)", "attempt to index global 'coroutine' (a nil value)"),
        ("python.eval('1')", "attempt to index global 'python' (a nil value)"),
        ("require('os')", "require is not available to resource interpreter scripts"),
        ("load('return 1')", "load is not available to resource interpreter scripts"),
        ("loadstring('return 1')", "loadstring is not available to resource interpreter scripts"),
        ("dofile('/etc/passwd')", "dofile is not available to resource interpreter scripts"),
        ("loadfile('/etc/passwd')", "loadfile is not available to resource interpreter scripts"),
        ("getfenv(0)", "getfenv is not available to resource interpreter scripts"),
        ("setfenv(1, {})", "setfenv is not available to resource interpreter scripts"),
        ("collectgarbage()", "collectgarbage is not available to resource interpreter scripts"),
        ("getmetatable('')", "getmetatable is not available to resource interpreter scripts"),
        ("setmetatable({}, {})", "setmetatable is not available to resource interpreter scripts"),
        ("rawget(_G, 'os')", "rawget is not available to resource interpreter scripts"),
        ("string.dump(print)", "attempt to call field 'dump' (a nil value)"),
        ("_G.os.exit(1)", "attempt to index field 'os' (a nil value)"),
    ],
)
def test_sandbox_refuses(body: str, error: str) -> None:
    result = interpret_with(health_script(f"  {body}\n  return true"))
    assert result == HealthResult(UNKNOWN, f"luaScript:2: {error}")


def test_sandbox_offers_the_safe_libraries() -> None:
    script = health_script("""
      local names = {}
      for _, c in ipairs({"b", "a"}) do table.insert(names, string.upper(c)) end
      table.sort(names)
      local ok = pcall(error, "caught")
      local handled, message = xpcall(function() error("x", 0) end, function(m) return "handled " .. m end)
      return table.concat(names, ",") == "A,B" and ("abc"):find("b") == 2 and math.max(1, 2) == 2
        and tonumber("3") == 3 and tostring(4) == "4" and select("#", 1, 2) == 2 and not ok
        and not handled and message == "handled x" and unpack({7}) == 7 and _VERSION == "Lua 5.1"
        and next({}) == nil and type(print) == "function" and print("ignored") == nil
        and _G.string == string
    """)
    assert interpret_with(script) == HealthResult(HEALTHY)


def test_globals_do_not_survive_between_calls() -> None:
    script = "calls = (calls or 0) + 1\n" + health_script(
        "string.upper = nil\n  return calls == 1 and string.len('ab') == 2")
    interpreter = HealthInterpreter([ric("stateful", script)])
    assert [interpreter.interpret(deployment()).health for _ in range(3)] == [HEALTHY] * 3


def test_memory_is_bounded() -> None:
    started = time.monotonic()
    result = interpret_with(health_script("return #string.rep('x', 2 ^ 30) > 0"))
    assert result == HealthResult(UNKNOWN, "Lua memory limit of 64 MiB exceeded")
    # Bounded, not benchmarked: without the limit this runs until the machine is out of memory.
    assert time.monotonic() - started < 30
    assert interpret_with(health_script("return #string.rep('x', 2 ^ 20) == 2 ^ 20")).health == HEALTHY


def test_pattern_length_is_bounded() -> None:
    # Lua 5.1 recurses per pattern item: such a pattern would crash the process.
    for call in ("string.find(s, p)", "s:match(p)", "s:gsub(p, '')", "s:gmatch(p)()"):
        body = f"local s, p = string.rep('a', 10), string.rep('a?', 100000)\n  {call}\n  return true"
        result = interpret_with(health_script(body))
        assert result.health == UNKNOWN
        assert "pattern longer than 4096 characters" in result.error


# --- time limit -------------------------------------------------------------------------------------


LOOPS = {
    "while-true": "while true do end",
    "recursion-in-pcall": "while true do pcall(function() for i = 1, 1e12 do end end) end",
    "nested-pcall": "while true do pcall(function() while true do pcall(function() while true do end end) end end) "
                    "end",
    "caught-then-true": "pcall(function() while true do end end)\n  return true",
    "xpcall-looping-handler": "while true do xpcall(function() while true do end end, function() while true do end "
                              "end) end",
    "sort-comparator": "local t = {} for i = 1, 100 do t[i] = i end\n  table.sort(t, function(a, b) "
                       "while true do end end)",
    "gsub-callback": "string.gsub(string.rep('a', 100), 'a', function() while true do end end)",
}


@pytest.mark.parametrize("body", LOOPS.values(), ids=LOOPS.keys())
def test_endless_script_is_stopped(body: str) -> None:
    interpreter = HealthInterpreter([ric("loop", health_script(body))], timeout=SHORT)
    started = time.monotonic()
    result = interpreter.interpret(deployment())
    elapsed = time.monotonic() - started
    assert result == HealthResult(UNKNOWN, "Lua script exceeded its time limit of 0.2s")
    assert SHORT <= elapsed < SHORT + 0.5


def test_runtime_stays_usable_after_a_timeout() -> None:
    script = health_script("if observedObj.spec.replicas == 0 then while true do end end\n  return true")
    interpreter = HealthInterpreter([ric("sometimes-loops", script)], timeout=SHORT)
    assert interpreter.interpret(deployment(0, 0)).health == UNKNOWN
    assert interpreter.interpret(deployment(3, 3)) == HealthResult(HEALTHY)
    assert interpreter.interpret(deployment(0, 0)).health == UNKNOWN


def test_default_time_limit_is_one_second() -> None:
    # Karmada's limit; not run here to keep the suite fast (the loops above use 0.2 s).
    assert LuaHealthScript(health_script("return true")).timeout == DEFAULT_TIMEOUT == 1.0


async def test_interpret_from_asyncio_in_threads() -> None:
    interpreter = HealthInterpreter([seed_customization(),
                                     ric("loop", health_script("while true do end"), kind="StatefulSet")],
                                    timeout=SHORT)
    looping = {**deployment(), "kind": "StatefulSet"}
    objects = [deployment(3, 3), deployment(3, 1), looping] * 2
    started = time.monotonic()
    results = await asyncio.gather(*(asyncio.to_thread(interpreter.interpret, obj) for obj in objects))
    assert [r.health for r in results] == [HEALTHY, UNHEALTHY, UNKNOWN] * 2
    # Runs of one script are serialized: two loops of 0.2 s each on the same script.
    assert time.monotonic() - started < 2 * SHORT + 1


# --- precedence and rules ---------------------------------------------------------------------------


def test_customization_for_another_kind_does_not_apply() -> None:
    never = health_script("return false")
    interpreter = HealthInterpreter([
        ric("statefulsets", never, kind="StatefulSet"),
        ric("old-deployments", never, api_version="apps/v1beta1"),
    ])
    assert interpreter.interpret(deployment()) == HealthResult(HEALTHY)
    assert interpreter.interpret({**deployment(), "kind": "StatefulSet"}) == HealthResult(UNHEALTHY)


def test_customization_for_a_kind_without_native_rule() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"failed": 1}}
    interpreter = HealthInterpreter([ric("jobs", health_script("return (observedObj.status.failed or 0) == 0"),
                                         api_version="batch/v1", kind="Job")])
    assert HealthInterpreter().interpret(job).health == HEALTHY
    assert interpreter.interpret(job).health == UNHEALTHY


def test_customization_without_health_script_leaves_native() -> None:
    other = ResourceInterpreterCustomization(
        metadata={"name": "replicas-only"},
        spec={"target": {"api_version": "apps/v1", "kind": "Deployment"},
              "customizations": {"replica_resource": {"lua_script": "function GetReplicas(o) return 1 end"}}},
    )
    interpreter = HealthInterpreter([other, ric("empty", "")])
    assert not interpreter.has_rule("apps/v1", "Job")
    assert interpreter.interpret(deployment(3, 1)) == HealthResult(HEALTHY)
    assert interpreter.interpret({**deployment(), "status": {}}).health == UNHEALTHY


def test_first_customization_by_name_wins() -> None:
    interpreter = HealthInterpreter([ric("b-healthy", health_script("return true")),
                                     ric("a-unhealthy", health_script("return false"))])
    assert interpreter.interpret(deployment()).health == UNHEALTHY


def test_has_rule() -> None:
    interpreter = HealthInterpreter([ric("jobs", health_script("return true"), "batch/v1", "Job"),
                                     ric("workloads", health_script("return true"), "example.io/v1", "Workload")])
    assert interpreter.has_rule("batch/v1", "Job")
    assert interpreter.has_rule("example.io/v1", "Workload")
    assert interpreter.has_rule("apps/v1", "Deployment")
    assert not interpreter.has_rule("example.io/v2", "Workload")
    assert not HealthInterpreter().has_rule("batch/v1", "Job")


def test_set_customizations_replaces_and_compiles_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []

    class CountingScript(LuaHealthScript):
        def __init__(self, script: str, timeout: float) -> None:
            compiled.append(script)
            super().__init__(script, timeout)

    monkeypatch.setattr(health_module, "LuaHealthScript", CountingScript)
    never = health_script("return false")
    interpreter = HealthInterpreter([ric("deployments", never)])
    assert interpreter.interpret(deployment()).health == UNHEALTHY
    # An informer resync, plus the same script for a second kind: nothing is recompiled.
    interpreter.set_customizations([ric("deployments", never), ric("workloads", never, "example.io/v1", "Workload")])
    assert compiled == [never]
    assert interpreter.has_rule("example.io/v1", "Workload")
    interpreter.set_customizations([])
    assert interpreter.interpret(deployment()).health == HEALTHY
    assert not interpreter.has_rule("example.io/v1", "Workload")


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        HealthInterpreter(timeout=0)


# --- admission shares the compiler -------------------------------------------------------------------


@pytest.mark.parametrize("check", [lua_compile_error, admission_compile_error])
def test_compile_check(check: Any) -> None:
    assert check(health_script("return true")) is None
    assert check("error('not run')") is None
    assert check("function InterpretHealth(o)") == "luaScript:1: 'end' expected near '<eof>'"
    # The lexer quotes half of a multi-byte character: still reported, not a crash.
    assert check("return é") == "luaScript:1: unexpected symbol near '\ufffd'"
    assert check("\x1bLua\x51\x00") == "precompiled Lua bytecode is not accepted; provide Lua source"
