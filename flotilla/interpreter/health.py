"""Health of a member object: the entry point the work-status controller calls.

Precedence (docs/karmada-rules.md §13): a ResourceInterpreterCustomization health script for
the object's exact (apiVersion, kind), else Karmada's native rule, else
Healthy. Flotilla has no interpreter webhooks or bundled third-party
customizations, the two layers Karmada puts in between.

`interpret` is a coroutine because a Lua script runs in a worker process of
the script pool (flotilla.interpreter.pool), never on the caller's event
loop: a script can hang in one C call that only killing its process stops.
Native rules and "no rule" answer in this process without awaiting anything:
they take microseconds, and a failover interprets thousands of objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.lua import HEALTH_FUNCTION, compile_failure, health_of, lua_compile_error
from flotilla.interpreter.native import native_health_rule
from flotilla.interpreter.pool import ScriptRunner

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"


@dataclass(frozen=True, slots=True)
class HealthResult:
    health: str
    # Why the health is Unknown; the caller records it in an Event.
    error: str = ""
    # The ResourceInterpreterCustomization whose script decided, for that Event to name; not
    # part of the verdict (two customizations with the same script decide alike).
    customization: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class _ScriptRule:
    script: str
    customization: str
    compile_error: str


class HealthInterpreter:
    """`runner` runs the Lua scripts (the service's ScriptPool); without one, an object whose kind
    has a script reads Unknown. `timeout` is each call's limit, the runner's own by default.

    `unreadable`: the customizations stored but not known (their values do not decode and no
    good one was seen). While there is one, no health is interpreted: its rules are unknown, and
    read without them a Healthy workload could read Unhealthy (and be failed over) or the other
    way round. Everything reads Unknown, which pauses application failover and keeps eviction
    tasks, until the customization reads again."""

    def __init__(self, customizations: Iterable[ResourceInterpreterCustomization] = (), *,
                 runner: ScriptRunner | None = None, timeout: float | None = None,
                 unreadable: Callable[[], Sequence[str]] | None = None) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._runner = runner
        self._timeout = timeout
        self._unreadable = unreadable
        self._rules: dict[tuple[str, str], _ScriptRule] = {}
        # Compile errors by script ("" when it compiles), so an informer resync compiles nothing.
        self._compiled: dict[str, str] = {}
        self.set_customizations(customizations)

    def set_customizations(self, customizations: Iterable[ResourceInterpreterCustomization]) -> None:
        """Replace the customizations (the RIC informer's current list).

        Each new script is compiled here once, without running anything, so a
        script that does not compile reads Unknown without asking a worker.
        The rule table is swapped in one assignment.
        """
        compiled: dict[str, str] = {}
        rules: dict[tuple[str, str], _ScriptRule] = {}
        for key, (name, script) in _health_scripts(customizations).items():
            error = compiled.get(script, self._compiled.get(script))
            if error is None:
                message = lua_compile_error(script)
                # Karmada fails each interpretation with a broken script rather than falling
                # back to native: the kind still has a rule, it reads Unknown.
                error = compile_failure(message) if message is not None else ""
            compiled[script] = error
            rules[key] = _ScriptRule(script, name, error)
        self._rules, self._compiled = rules, compiled

    def has_rule(self, api_version: str, kind: str) -> bool:
        """Whether the kind has a health interpreter (Lua or native); application failover requires one."""
        return (api_version, kind) in self._rules or native_health_rule(api_version, kind) is not None

    async def interpret(self, obj: Mapping[str, Any]) -> HealthResult:
        unknown = self._unreadable() if self._unreadable is not None else ()
        if unknown:
            return HealthResult(UNKNOWN, f"ResourceInterpreterCustomization {unknown[0]} cannot be read: health is "
                                         f"not interpreted until it can be")
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        script_rule = self._rules.get((api_version, kind))
        if script_rule is not None:
            return await self._run(script_rule, obj)
        rule = native_health_rule(api_version, kind)
        if rule is None:
            return HealthResult(HEALTHY)
        try:
            healthy = rule(obj)
        except InterpretationError as error:
            return HealthResult(UNKNOWN, str(error))
        return HealthResult(HEALTHY if healthy else UNHEALTHY)

    async def _run(self, rule: _ScriptRule, obj: Mapping[str, Any]) -> HealthResult:
        if rule.compile_error:
            return HealthResult(UNKNOWN, rule.compile_error, rule.customization)
        if self._runner is None:
            return HealthResult(UNKNOWN, "Lua health scripts are not run here: no script runner",
                                rule.customization)
        result = await self._runner.call(rule.script, HEALTH_FUNCTION, [obj], self._timeout)
        if not result.ok:
            return HealthResult(UNKNOWN, result.error, rule.customization)
        try:
            healthy = health_of(result.values)
        except InterpretationError as error:
            return HealthResult(UNKNOWN, str(error), rule.customization)
        return HealthResult(HEALTHY if healthy else UNHEALTHY, customization=rule.customization)


def _health_scripts(customizations: Iterable[ResourceInterpreterCustomization]) -> dict[
        tuple[str, str], tuple[str, str]]:
    """The customization's name and health script per target (apiVersion, kind).

    Like Karmada's config manager: customizations in name order, the first
    non-empty script for a target wins.
    """
    scripts: dict[tuple[str, str], tuple[str, str]] = {}
    for customization in sorted(customizations, key=lambda c: c.metadata.name):
        rules = customization.spec.customizations
        if not rules.HasField("health_interpretation"):
            continue
        script = rules.health_interpretation.lua_script
        target = customization.spec.target
        key = (target.api_version, target.kind)
        if script and key not in scripts:
            scripts[key] = (customization.metadata.name, script)
    return scripts
