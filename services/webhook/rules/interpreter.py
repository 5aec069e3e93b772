"""ResourceInterpreterCustomization: a target kind and Lua scripts that compile."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from services.webhook.rules.fields import child, required
from services.webhook.rules.lua import lua_compile_error


def validate_interpreter_customization(customization: ResourceInterpreterCustomization) -> Iterator[FieldError]:
    target = customization.spec.target
    target_path = "spec.target"
    if not target.api_version:
        yield required(child(target_path, "apiVersion"))
    if not target.kind:
        yield required(child(target_path, "kind"))
    rules = customization.spec.customizations
    for fd in rules.DESCRIPTOR.fields:
        if not rules.HasField(fd.name):
            continue
        script_path = child(child("spec.customizations", fd.json_name), "luaScript")
        script = getattr(rules, fd.name).lua_script
        if not script:
            yield required(script_path)
            continue
        # A script that does not compile would make every interpretation of
        # the kind fail at run time (health would turn Unknown cluster-wide).
        error = lua_compile_error(script)
        if error:
            yield FieldError(script_path, f"Lua script does not compile: {error}")
