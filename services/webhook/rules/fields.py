"""Field paths in Karmada's YAML spelling (`spec.placement.spreadConstraints[0].minGroups`) and error shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from flotilla.api.codec import FieldError
from flotilla.api.limits import path_key


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, map_key: str) -> str:
    # The codec spells map entries the same way (`metadata.labels[app]`), so
    # parse errors and admission errors point at fields alike.
    return f"{path}[{path_key(map_key)}]"


def required(path: str) -> FieldError:
    return FieldError(path, "required")


def unsupported(path: str, value: str, supported: Iterable[str]) -> FieldError:
    choices = ", ".join(f'"{s}"' for s in supported)
    return FieldError(path, f'unsupported value "{value}": supported values: {choices}')


def invalid(path: str, value: object, message: str) -> FieldError:
    return FieldError(path, f"invalid value {_show(value)}: {message}")


def too_many(path: str, count: int, limit: int) -> FieldError:
    # Kubernetes' field.TooMany wording.
    return FieldError(path, f"Too many: {count}: must have at most {limit} items")


def too_long(path: str, limit: int) -> FieldError:
    # Kubernetes' field.TooLong wording.
    return FieldError(path, f"Too long: must have at most {limit} bytes")


def check(path: str, value: str, problems: Callable[[str], list[str]]) -> Iterator[FieldError]:
    """One error for `value` if the name rule `problems` finds anything wrong with it."""
    found = problems(value)
    if found:
        yield invalid(path, value, "; ".join(found))


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)
