"""Health of a member object: the entry point the work-status and application failover controllers call.

Precedence (docs/karmada-rules.md §13): a ResourceInterpreterCustomization health script for
the object's exact (apiVersion, kind), else Karmada's native rule, else
Healthy. Flotilla has no interpreter webhooks or bundled third-party
customizations, the two layers Karmada puts in between.

`interpret` is synchronous. A native rule takes microseconds; a Lua script is
bounded by the timeout (1 s by default), during which lupa releases the GIL.
asyncio callers that cannot afford that pause on the loop run it in a thread:
`await asyncio.to_thread(interpreter.interpret, obj)`. One interpreter may be
used from many threads; calls of the same script are serialized.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.interpreter.errors import InterpretationError
from flotilla.interpreter.lua import DEFAULT_TIMEOUT, LuaHealthScript
from flotilla.interpreter.native import native_health_rule

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"


@dataclass(frozen=True, slots=True)
class HealthResult:
    health: str
    # Why the health is Unknown; the caller records it in an Event.
    error: str = ""


@dataclass(frozen=True, slots=True)
class _ScriptRule:
    script: str
    compiled: LuaHealthScript | None
    compile_error: str

    def interpret(self, obj: Mapping[str, Any]) -> bool:
        if self.compiled is None:
            raise InterpretationError(self.compile_error)
        return self.compiled.interpret(obj)


class HealthInterpreter:
    """`unreadable`: the customizations stored but not known (their values do not decode and no
    good one was seen). While there is one, no health is interpreted: its rules are unknown, and
    read without them a Healthy workload could read Unhealthy (and be failed over) or the other
    way round. Everything reads Unknown, which pauses application failover and keeps eviction
    tasks, until the customization reads again."""

    def __init__(self, customizations: Iterable[ResourceInterpreterCustomization] = (),
                 timeout: float = DEFAULT_TIMEOUT, unreadable: Callable[[], Sequence[str]] | None = None) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._timeout = timeout
        self._unreadable = unreadable
        self._rules: dict[tuple[str, str], _ScriptRule] = {}
        self.set_customizations(customizations)

    def set_customizations(self, customizations: Iterable[ResourceInterpreterCustomization]) -> None:
        """Replace the customizations (the RIC informer's current list).

        A script already compiled is reused, so an informer resync costs no
        compilation. The rule table is swapped in one assignment: a call
        running in another thread sees the old table or the new one.
        """
        compiled = {rule.script: rule for rule in self._rules.values()}
        rules: dict[tuple[str, str], _ScriptRule] = {}
        for key, script in _health_scripts(customizations).items():
            rule = compiled.get(script)
            if rule is None:
                rule = compiled[script] = self._compile(script)
            rules[key] = rule
        self._rules = rules

    def has_rule(self, api_version: str, kind: str) -> bool:
        """Whether the kind has a health interpreter (Lua or native); application failover requires one."""
        return (api_version, kind) in self._rules or native_health_rule(api_version, kind) is not None

    def interpret(self, obj: Mapping[str, Any]) -> HealthResult:
        unknown = self._unreadable() if self._unreadable is not None else ()
        if unknown:
            return HealthResult(UNKNOWN, f"ResourceInterpreterCustomization {unknown[0]} cannot be read: health is "
                                         f"not interpreted until it can be")
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        script_rule = self._rules.get((api_version, kind))
        rule = script_rule.interpret if script_rule is not None else native_health_rule(api_version, kind)
        if rule is None:
            return HealthResult(HEALTHY)
        try:
            healthy = rule(obj)
        except InterpretationError as error:
            return HealthResult(UNKNOWN, str(error))
        return HealthResult(HEALTHY if healthy else UNHEALTHY)

    def _compile(self, script: str) -> _ScriptRule:
        try:
            return _ScriptRule(script, LuaHealthScript(script, self._timeout), "")
        except InterpretationError as error:
            # Karmada fails each interpretation with a broken script rather
            # than falling back to native: the kind still has a rule, it reads Unknown.
            return _ScriptRule(script, None, str(error))


def _health_scripts(customizations: Iterable[ResourceInterpreterCustomization]) -> dict[tuple[str, str], str]:
    """The health script per target (apiVersion, kind).

    Like Karmada's config manager: customizations in name order, the first
    non-empty script for a target wins.
    """
    scripts: dict[tuple[str, str], str] = {}
    for customization in sorted(customizations, key=lambda c: c.metadata.name):
        rules = customization.spec.customizations
        if not rules.HasField("health_interpretation"):
            continue
        script = rules.health_interpretation.lua_script
        target = customization.spec.target
        key = (target.api_version, target.kind)
        if script and key not in scripts:
            scripts[key] = script
    return scripts
