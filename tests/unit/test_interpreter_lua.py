"""ResourceInterpreterCustomization health scripts: convention, sandbox, time limit, precedence.

Scripts run as the executor runs them, in a worker process of a ScriptPool (one for the module:
starting workers is what takes time, not the calls)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

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
    ScriptPool,
    lua_compile_error,
)
from flotilla.interpreter import health as health_module
from services.webhook.rules.lua import lua_compile_error as admission_compile_error
from tests.factories import EXAMPLES_DIR

SHORT = 0.2  # seconds: the time limit in tests that loop forever

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pool() -> AsyncIterator[ScriptPool]:
    async with ScriptPool() as scripts:
        await scripts.wait_ready()
        yield scripts


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


async def interpret_with(pool: ScriptPool, script: str, obj: dict[str, Any] | None = None,
                         timeout: float = 1.0) -> HealthResult:
    interpreter = HealthInterpreter([ric("custom", script)], runner=pool, timeout=timeout)
    return await interpreter.interpret(deployment() if obj is None else obj)


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
async def test_seed_customization(obj: dict[str, Any], expected: str, pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([seed_customization()], runner=pool)
    assert await interpreter.interpret(obj) == HealthResult(expected)


async def test_seed_customization_overrides_native_rule(pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([seed_customization()], runner=pool)
    natively_healthy = deployment(3, 1)
    assert (await HealthInterpreter().interpret(natively_healthy)).health == HEALTHY
    assert (await interpreter.interpret(natively_healthy)).health == UNHEALTHY


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
async def test_non_boolean_return_is_unknown(body: str, kind: str, pool: ScriptPool) -> None:
    result = await interpret_with(pool, health_script(body))
    assert result == HealthResult(UNKNOWN, f"InterpretHealth returned a {kind}, not a boolean")


async def test_only_the_first_return_value_counts(pool: ScriptPool) -> None:
    assert (await interpret_with(pool, health_script("return false, 'ignored'"))).health == UNHEALTHY
    assert (await interpret_with(pool, health_script("return 'x', true"))).health == UNKNOWN


async def test_runtime_error_is_unknown_with_position(pool: ScriptPool) -> None:
    result = await interpret_with(
        pool, health_script("  return observedObj.spec.template.spec.containers[1].name == 'x'"))
    assert result.health == UNKNOWN
    assert result.error == "luaScript:2: attempt to index field 'template' (a nil value)"


async def test_error_call_is_unknown(pool: ScriptPool) -> None:
    assert await interpret_with(pool, health_script("error('cannot decide')")) == HealthResult(
        UNKNOWN, "luaScript:2: cannot decide")
    assert (await interpret_with(pool, health_script("error({})"))).error.startswith("table: ")


async def test_error_message_is_one_line_and_bounded(pool: ScriptPool) -> None:
    result = await interpret_with(pool, health_script("error('first\\nsecond ' .. string.rep('x', 5000), 0)"))
    assert result.health == UNKNOWN
    assert "\n" not in result.error and result.error.startswith("first second xxx")
    assert len(result.error) <= 512


async def test_non_utf8_error_message_is_decoded_leniently(pool: ScriptPool) -> None:
    result = await interpret_with(pool, health_script("error('bad ' .. string.char(255), 0)"))
    assert result == HealthResult(UNKNOWN, "bad \ufffd")


async def test_missing_function_is_unknown(pool: ScriptPool) -> None:
    assert await interpret_with(pool, "function interpretHealth(o) return true end") == HealthResult(
        UNKNOWN, "script does not define function InterpretHealth")
    assert await interpret_with(pool, "InterpretHealth = true") == HealthResult(
        UNKNOWN, "InterpretHealth is a boolean, not a function")


async def test_top_level_error_is_unknown(pool: ScriptPool) -> None:
    result = await interpret_with(pool, "error('at load')\n" + health_script("return true"))
    assert result == HealthResult(UNKNOWN, "luaScript:1: at load")


async def test_compile_error_is_unknown_and_still_a_rule(pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([ric("broken", "function InterpretHealth(o)\n  return true\n")], runner=pool)
    assert interpreter.has_rule("apps/v1", "Deployment")
    result = await interpreter.interpret(deployment())
    assert result.health == UNKNOWN
    assert result.error == "Lua script does not compile: luaScript:3: 'end' expected (to close 'function' at " \
                           "line 1) near '<eof>'"


async def test_lua_health_script_raises() -> None:
    with pytest.raises(InterpretationError, match=r"^Lua script does not compile: luaScript:1:"):
        LuaHealthScript("function InterpretHealth(o)")
    script = LuaHealthScript(health_script("return observedObj.spec.replicas"))
    with pytest.raises(InterpretationError, match=r"^InterpretHealth returned a number, not a boolean$"):
        script.interpret(deployment())
    assert LuaHealthScript(health_script("return observedObj.spec.replicas == 3")).interpret(deployment()) is True


async def test_lua_51_only(pool: ScriptPool) -> None:
    # gopher-lua is Lua 5.1: integer division is a syntax error there.
    result = await interpret_with(pool, health_script("return observedObj.spec.replicas // 2 == 1"))
    assert result.error.startswith(
        "Lua script does not compile: luaScript:2:")


# --- the object as Lua sees it -------------------------------------------------------------------


async def test_object_conversion(pool: ScriptPool) -> None:
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
    assert await interpret_with(pool, script, obj) == HealthResult(HEALTHY)


async def test_script_changes_to_the_object_do_not_reach_python(pool: ScriptPool) -> None:
    obj = deployment()
    result = await interpret_with(pool, health_script("observedObj.spec.replicas = 99 return true"), obj)
    assert result.health == HEALTHY
    assert obj["spec"]["replicas"] == 3


async def test_non_json_object_is_unknown(pool: ScriptPool) -> None:
    obj = deployment()
    obj["metadata"]["annotations"] = {"when": object()}
    result = await interpret_with(pool, health_script("return true"), obj)
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
        ("require('os')", 'require is not available to resource interpreter scripts, but for require("kube")'),
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
async def test_sandbox_refuses(body: str, error: str, pool: ScriptPool) -> None:
    result = await interpret_with(pool, health_script(f"  {body}\n  return true"))
    assert result == HealthResult(UNKNOWN, f"luaScript:2: {error}")


async def test_sandbox_offers_the_safe_libraries(pool: ScriptPool) -> None:
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
    assert await interpret_with(pool, script) == HealthResult(HEALTHY)


async def test_globals_do_not_survive_between_calls(pool: ScriptPool) -> None:
    script = "calls = (calls or 0) + 1\n" + health_script(
        "string.upper = nil\n  return calls == 1 and string.len('ab') == 2")
    interpreter = HealthInterpreter([ric("stateful", script)], runner=pool)
    assert [(await interpreter.interpret(deployment())).health for _ in range(3)] == [HEALTHY] * 3


async def test_memory_is_bounded(pool: ScriptPool) -> None:
    started = time.monotonic()
    result = await interpret_with(pool, health_script("return #string.rep('x', 2 ^ 30) > 0"))
    assert result == HealthResult(UNKNOWN, "Lua memory limit of 64 MiB exceeded")
    # Bounded, not benchmarked: without the limit this runs until the machine is out of memory.
    assert time.monotonic() - started < 30
    assert (await interpret_with(pool, health_script("return #string.rep('x', 2 ^ 20) == 2 ^ 20"))).health == HEALTHY


async def test_pattern_length_is_bounded(pool: ScriptPool) -> None:
    # Lua 5.1 recurses per pattern item: such a pattern would crash the process.
    for call in ("string.find(s, p)", "s:match(p)", "s:gsub(p, '')", "s:gmatch(p)()"):
        body = f"local s, p = string.rep('a', 10), string.rep('a?', 100000)\n  {call}\n  return true"
        result = await interpret_with(pool, health_script(body))
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
async def test_endless_script_is_stopped(body: str, pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([ric("loop", health_script(body))], timeout=SHORT, runner=pool)
    started = time.monotonic()
    result = await interpreter.interpret(deployment())
    elapsed = time.monotonic() - started
    assert result == HealthResult(UNKNOWN, "Lua script exceeded its time limit of 0.2s")
    assert SHORT <= elapsed < SHORT + 0.5


async def test_runtime_stays_usable_after_a_timeout(pool: ScriptPool) -> None:
    script = health_script("if observedObj.spec.replicas == 0 then while true do end end\n  return true")
    interpreter = HealthInterpreter([ric("sometimes-loops", script)], timeout=SHORT, runner=pool)
    assert (await interpreter.interpret(deployment(0, 0))).health == UNKNOWN
    assert await interpreter.interpret(deployment(3, 3)) == HealthResult(HEALTHY)
    assert (await interpreter.interpret(deployment(0, 0))).health == UNKNOWN


async def test_default_time_limit_is_a_tenth_of_a_second() -> None:
    # A health script answers in microseconds; the loops above use 0.2 s to be told from it.
    assert LuaHealthScript(health_script("return true")).timeout == DEFAULT_TIMEOUT == 0.1
    assert ScriptPool().timeout == DEFAULT_TIMEOUT


async def test_interpret_concurrently(pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([seed_customization(),
                                     ric("loop", health_script("while true do end"), kind="StatefulSet")],
                                    timeout=SHORT, runner=pool)
    looping = {**deployment(), "kind": "StatefulSet"}
    objects = [deployment(3, 3), deployment(3, 1), looping] * 2
    started = time.monotonic()
    results = await asyncio.gather(*(interpreter.interpret(obj) for obj in objects))
    assert [r.health for r in results] == [HEALTHY, UNHEALTHY, UNKNOWN] * 2
    # One script holds at most one of the two workers: the two loops of 0.2 s run one after
    # the other, and the seed script's calls run beside them on the other worker.
    assert time.monotonic() - started < 2 * SHORT + 1


# --- precedence and rules ---------------------------------------------------------------------------


async def test_customization_for_another_kind_does_not_apply(pool: ScriptPool) -> None:
    never = health_script("return false")
    interpreter = HealthInterpreter([
        ric("statefulsets", never, kind="StatefulSet"),
        ric("old-deployments", never, api_version="apps/v1beta1"),
    ], runner=pool)
    assert await interpreter.interpret(deployment()) == HealthResult(HEALTHY)
    assert await interpreter.interpret({**deployment(), "kind": "StatefulSet"}) == HealthResult(UNHEALTHY)


async def test_customization_for_a_kind_without_native_rule(pool: ScriptPool) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"failed": 1}}
    interpreter = HealthInterpreter([ric("jobs", health_script("return (observedObj.status.failed or 0) == 0"),
                                         api_version="batch/v1", kind="Job")], runner=pool)
    assert (await HealthInterpreter().interpret(job)).health == HEALTHY
    assert (await interpreter.interpret(job)).health == UNHEALTHY


async def test_customization_without_health_script_leaves_native(pool: ScriptPool) -> None:
    other = ResourceInterpreterCustomization(
        metadata={"name": "replicas-only"},
        spec={"target": {"api_version": "apps/v1", "kind": "Deployment"},
              "customizations": {"replica_resource": {"lua_script": "function GetReplicas(o) return 1 end"}}},
    )
    interpreter = HealthInterpreter([other, ric("empty", "")], runner=pool)
    assert not interpreter.has_rule("apps/v1", "Job")
    assert await interpreter.interpret(deployment(3, 1)) == HealthResult(HEALTHY)
    assert (await interpreter.interpret({**deployment(), "status": {}})).health == UNHEALTHY


async def test_first_customization_by_name_wins(pool: ScriptPool) -> None:
    interpreter = HealthInterpreter([ric("b-healthy", health_script("return true")),
                                     ric("a-unhealthy", health_script("return false"))], runner=pool)
    assert (await interpreter.interpret(deployment())).health == UNHEALTHY


async def test_has_rule() -> None:
    interpreter = HealthInterpreter([ric("jobs", health_script("return true"), "batch/v1", "Job"),
                                     ric("workloads", health_script("return true"), "example.io/v1", "Workload")])
    assert interpreter.has_rule("batch/v1", "Job")
    assert interpreter.has_rule("example.io/v1", "Workload")
    assert interpreter.has_rule("apps/v1", "Deployment")
    assert not interpreter.has_rule("example.io/v2", "Workload")
    assert not HealthInterpreter().has_rule("batch/v1", "Job")


async def test_set_customizations_replaces_and_compiles_once(monkeypatch: pytest.MonkeyPatch,
                                                             pool: ScriptPool) -> None:
    compiled: list[str] = []

    def counting_compile_error(script: str) -> str | None:
        compiled.append(script)
        return lua_compile_error(script)

    monkeypatch.setattr(health_module, "lua_compile_error", counting_compile_error)
    never = health_script("return false")
    interpreter = HealthInterpreter([ric("deployments", never)], runner=pool)
    assert (await interpreter.interpret(deployment())).health == UNHEALTHY
    # An informer resync, plus the same script for a second kind: nothing is recompiled.
    interpreter.set_customizations([ric("deployments", never), ric("workloads", never, "example.io/v1", "Workload")])
    assert compiled == [never]
    assert interpreter.has_rule("example.io/v1", "Workload")
    interpreter.set_customizations([])
    assert (await interpreter.interpret(deployment())).health == HEALTHY
    assert not interpreter.has_rule("example.io/v1", "Workload")


async def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        HealthInterpreter(timeout=0)


# --- admission shares the compiler -------------------------------------------------------------------


@pytest.mark.parametrize("check", [lua_compile_error, admission_compile_error])
async def test_compile_check(check: Any) -> None:
    assert check(health_script("return true")) is None
    assert check("error('not run')") is None
    assert check("function InterpretHealth(o)") == "luaScript:1: 'end' expected near '<eof>'"
    # The lexer quotes half of a multi-byte character: still reported, not a crash.
    assert check("return é") == "luaScript:1: unexpected symbol near '\ufffd'"
    assert check("\x1bLua\x51\x00") == "precompiled Lua bytecode is not accepted; provide Lua source"
