"""Command-line flags with `FLOTILLA_<FLAG>` environment fallbacks, and flag value types."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Options = TypeVar("_Options", bound="DataclassInstance")

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A Go-style duration ("10s", "5m", "1h30m", "500ms", "0") in seconds."""
    text = text.strip()
    if text in ("0", "0s"):
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use forms like 10s, 5m, 1h30m, 500ms")
    return total


def feature_gates(text: str) -> dict[str, bool]:
    """`Failover=true,GracefulEviction=false` as a dict."""
    gates: dict[str, bool] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"invalid feature gate {item!r}: use Name=true|false")
        gates[name.strip()] = value.lower() == "true"
    return gates


def env_name(option: str) -> str:
    return "FLOTILLA_" + option.lstrip("-").upper().replace("-", "_")


def apply_env_defaults(parser: argparse.ArgumentParser, environ: Mapping[str, str] | None = None) -> None:
    """Let `FLOTILLA_<FLAG>` set any long flag's default; the command line still wins."""
    environ = os.environ if environ is None else environ
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.dest == "help":
            continue
        name = env_name(longs[0])
        value = environ.get(name)
        if value is None:
            continue
        if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction
                      | argparse.BooleanOptionalAction):
            action.default = value.lower() in ("1", "true", "yes")
        elif callable(action.type):  # a type given by registered name is not used here
            try:
                action.default = action.type(value)
            except (ValueError, TypeError, argparse.ArgumentTypeError) as e:
                parser.error(f"{name}={value!r}: {e}")
        else:
            action.default = value
        # argparse checks choices only on the command line; a default from the environment is
        # checked here, as a bad flag would be.
        if action.choices is not None and action.default not in action.choices:
            parser.error(f"{name}={value!r}: not one of {', '.join(map(str, action.choices))}")
        # An environment value satisfies a required flag.
        action.required = False


def flag(name: str, default: Any = dataclasses.MISSING) -> Any:
    """A field of an options dataclass that `options_from` fills from the flag `name`, so each
    option names its flag once, beside its type."""
    return dataclasses.field(default=default, metadata={"flag": name})


def options_from(cls: type[_Options], args: argparse.Namespace) -> _Options:
    """An options dataclass from parsed flags: each field declared with `flag()` takes its flag's
    value; the others keep their defaults."""
    values = {f.name: getattr(args, f.metadata["flag"].lstrip("-").replace("-", "_"))
              for f in dataclasses.fields(cls)
              if "flag" in f.metadata}
    return cls(**values)
