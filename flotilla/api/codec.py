"""Karmada YAML/JSON <-> Flotilla messages.

Written against the message descriptors rather than json_format so that every
problem in a document is reported at once, each with the path a user can find
(`spec.placement.clusterTolerations[0].operatr: unknown field`), and so that
the output has Kubernetes' shape: omitempty, integers as numbers, second
precision timestamps, embedded objects inline.
"""

from __future__ import annotations

import calendar
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar, cast

import yaml
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.api import jsonbytes, limits, registry
from flotilla.api.v1.meta_pb2 import Unstructured

# Kubernetes metav1.MicroTime fields print with microseconds; every other
# timestamp is metav1.Time (seconds).
_MICRO_TIME_FIELDS = frozenset({"flotilla.v1.LeaseSpec.acquire_time", "flotilla.v1.LeaseSpec.renew_time"})

# resource.Quantity fields: Kubernetes accepts a JSON number for a quantity
# (`cpu: 2`) and prints it as a string, and so do we.
_QUANTITY_FIELDS = frozenset(
    {
        "flotilla.v1.ResourceModelRange.min",
        "flotilla.v1.ResourceModelRange.max",
        "flotilla.v1.ResourceSummary.allocatable",
        "flotilla.v1.ResourceSummary.allocating",
        "flotilla.v1.ResourceSummary.allocated",
        "flotilla.v1.ReplicaRequirements.resource_request",
    }
)

_T = FieldDescriptor
_INT_RANGES: dict[int, tuple[int, int, str]] = {
    _T.TYPE_INT32: (-(2**31), 2**31 - 1, "int32"),
    _T.TYPE_SINT32: (-(2**31), 2**31 - 1, "int32"),
    _T.TYPE_SFIXED32: (-(2**31), 2**31 - 1, "int32"),
    _T.TYPE_INT64: (-(2**63), 2**63 - 1, "int64"),
    _T.TYPE_SINT64: (-(2**63), 2**63 - 1, "int64"),
    _T.TYPE_SFIXED64: (-(2**63), 2**63 - 1, "int64"),
    _T.TYPE_UINT32: (0, 2**32 - 1, "uint32"),
    _T.TYPE_FIXED32: (0, 2**32 - 1, "uint32"),
    _T.TYPE_UINT64: (0, 2**64 - 1, "uint64"),
    _T.TYPE_FIXED64: (0, 2**64 - 1, "uint64"),
}

_INVALID = object()

M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class FieldError:
    path: str
    reason: str

    def __post_init__(self) -> None:
        # One line wherever it is shown, whatever the document held: reasons quote values
        # a user wrote, and a Lua error can span lines.
        object.__setattr__(self, "path", one_line(self.path))
        object.__setattr__(self, "reason", one_line(self.reason))

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


def one_line(text: str) -> str:
    """text with newlines and other unprintable characters as escapes (`\\n`, `\\u2028`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class CodecError(ValueError):
    """A document that does not fit the API; `errors` lists every problem found."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))


# -- decoding -----------------------------------------------------------------


def from_dict(data: Mapping[str, Any]) -> Message:
    """Parse one object, choosing its message type by apiVersion and kind.

    Kinds that are not built in become `Unstructured` resource templates.
    """
    if not isinstance(data, Mapping):
        raise CodecError([FieldError("", f"expected object, got {_json_type(data)}")])
    too_big = limits.shape_problem(data)
    if too_big is not None:
        raise CodecError([FieldError(*too_big)])
    errors: list[FieldError] = []
    for key in ("apiVersion", "kind"):
        value = data.get(key)
        if value is None or value == "":
            errors.append(FieldError(key, "required"))
        elif not isinstance(value, str):
            errors.append(FieldError(key, f"expected string, got {_json_type(value)}"))
    if errors:
        raise CodecError(errors)
    try:
        rt: registry.ResourceType[Message] = registry.for_kind(data["apiVersion"], data["kind"])
    except registry.UnknownResourceError as e:
        # A karmada.io kind Flotilla does not build is the kind's fault, not the apiVersion's.
        path = "kind" if isinstance(e, registry.UnsupportedKindError) else "apiVersion"
        raise CodecError([FieldError(path, str(e))]) from None
    return parse_as(rt.message, data)


def parse_as(message_cls: type[M], data: Any, path: str = "") -> M:
    """Parse data as message_cls; `path` prefixes error paths (for a fragment of a larger document)."""
    msg = message_cls()
    errors: list[FieldError] = []
    if isinstance(msg, Unstructured):
        _parse_unstructured(msg, data, path, errors)
    else:
        _parse_message(msg, data, path, errors)
    if errors:
        raise CodecError(errors)
    return msg


def from_json(text: str | bytes) -> Message:
    return from_dict(load_json(text))


def load_json(text: str | bytes) -> Any:
    """A JSON text's value; nesting too deep for Python's parser is an error like any other."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise CodecError([FieldError("", f"invalid JSON: {e}")]) from None
    except RecursionError:
        raise CodecError([FieldError("", f"invalid JSON: nested deeper than {limits.MAX_DEPTH} levels")]) from None


def _parse_unstructured(msg: Unstructured, data: Any, path: str, errors: list[FieldError]) -> None:
    if not isinstance(data, Mapping):
        errors.append(FieldError(path, f"expected object, got {_json_type(data)}"))
        return
    content: dict[str, Any] = {}
    for key, value in data.items():
        key_path = _join(path, key)
        if key in ("apiVersion", "kind"):
            if isinstance(value, str):
                setattr(msg, "api_version" if key == "apiVersion" else "kind", value)
            elif value is not None:
                errors.append(FieldError(key_path, f"expected string, got {_json_type(value)}"))
        elif key == "metadata":
            if value is not None:
                msg.metadata.SetInParent()
                _parse_message(msg.metadata, value, key_path, errors)
        else:
            content[key] = value
    if content:
        msg.content = _encode_json(content, path, errors)


def _parse_message(msg: Message, data: Any, path: str, errors: list[FieldError]) -> None:
    if not isinstance(data, Mapping):
        errors.append(FieldError(path, f"expected object, got {_json_type(data)}"))
        return
    fields = _fields_by_json_name(_descriptor(msg))
    for key, value in data.items():
        key_path = _join(path, key)
        fd = fields.get(key) if isinstance(key, str) else None
        if fd is None:
            errors.append(FieldError(key_path, "unknown field"))
        elif value is not None:
            # JSON null means "not set", as in Kubernetes.
            _parse_field(msg, fd, value, key_path, errors)


def _parse_field(msg: Message, fd: FieldDescriptor, value: Any, path: str, errors: list[FieldError]) -> None:
    if _is_map(fd):
        _parse_map(getattr(msg, fd.name), fd, value, path, errors)
    elif fd.is_repeated:
        if not isinstance(value, list | tuple):
            errors.append(FieldError(path, f"expected list, got {_json_type(value)}"))
            return
        container = getattr(msg, fd.name)
        for i, item in enumerate(value):
            item_path = f"{path}[{i}]"
            if fd.type == _T.TYPE_MESSAGE:
                if item is None:
                    errors.append(FieldError(item_path, "expected object, got null"))
                elif _message_type(fd).full_name == Timestamp.DESCRIPTOR.full_name:
                    ts = _parse_timestamp(item, item_path, errors)
                    if ts is not None:
                        container.add().CopyFrom(ts)
                else:
                    _parse_message(container.add(), item, item_path, errors)
            else:
                converted = _parse_scalar(fd, item, item_path, errors)
                if converted is not _INVALID:
                    container.append(converted)
    elif fd.type == _T.TYPE_MESSAGE:
        if _message_type(fd).full_name == Timestamp.DESCRIPTOR.full_name:
            ts = _parse_timestamp(value, path, errors)
            if ts is not None:
                getattr(msg, fd.name).CopyFrom(ts)
        else:
            sub = getattr(msg, fd.name)
            # An explicit `{}` is kept: Kubernetes prints a set pointer to an empty struct.
            sub.SetInParent()
            _parse_message(sub, value, path, errors)
    else:
        converted = _parse_scalar(fd, value, path, errors)
        if converted is not _INVALID:
            setattr(msg, fd.name, converted)


def _parse_map(container: Any, fd: FieldDescriptor, value: Any, path: str, errors: list[FieldError]) -> None:
    if not isinstance(value, Mapping):
        errors.append(FieldError(path, f"expected object, got {_json_type(value)}"))
        return
    value_fd = _message_type(fd).fields_by_name["value"]
    quantity = fd.full_name in _QUANTITY_FIELDS
    for key, item in value.items():
        item_path = f"{path}[{limits.path_key(str(key))}]"
        if not isinstance(key, str):
            errors.append(FieldError(item_path, f"expected string key, got {_json_type(key)}"))
        elif value_fd.type == _T.TYPE_MESSAGE:
            _parse_message(container[key], item, item_path, errors)
        else:
            converted = _parse_scalar(value_fd, item, item_path, errors, quantity)
            if converted is not _INVALID:
                container[key] = converted


def _parse_scalar(fd: FieldDescriptor, value: Any, path: str, errors: list[FieldError], quantity: bool = False) -> Any:
    kind = fd.type
    if kind == _T.TYPE_STRING:
        if isinstance(value, str):
            return value
        if (quantity or fd.full_name in _QUANTITY_FIELDS) and _is_number(value) and math.isfinite(value):
            return str(value)
        errors.append(FieldError(path, f"expected string, got {_json_type(value)}"))
    elif kind == _T.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        errors.append(FieldError(path, f"expected boolean, got {_json_type(value)}"))
    elif kind in _INT_RANGES:
        low, high, name = _INT_RANGES[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(FieldError(path, f"expected integer, got {_json_type(value)}"))
        elif not low <= value <= high:
            errors.append(FieldError(path, f"{value} is out of range for {name}"))
        else:
            return value
    elif kind in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        if _is_number(value):
            return float(value)
        errors.append(FieldError(path, f"expected number, got {_json_type(value)}"))
    elif kind == _T.TYPE_BYTES:
        return _encode_json(value, path, errors)
    elif kind == _T.TYPE_ENUM:
        if isinstance(value, str) and value in _enum_type(fd).values_by_name:
            return _enum_type(fd).values_by_name[value].number
        errors.append(FieldError(path, f"expected one of {', '.join(_enum_type(fd).values_by_name)}"))
    else:
        errors.append(FieldError(path, f"unsupported field type {kind}"))
    return _INVALID


def _parse_timestamp(value: Any, path: str, errors: list[FieldError]) -> Timestamp | None:
    if isinstance(value, datetime):
        # PyYAML's default loader turns unquoted timestamps into datetimes.
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return _timestamp(moment, value.microsecond * 1000)
    if not isinstance(value, str):
        errors.append(FieldError(path, f"expected timestamp string, got {_json_type(value)}"))
        return None
    ts = Timestamp()
    try:
        # RFC 3339 allows lower-case "t" and "z"; protobuf's parser wants them upper-case.
        ts.FromJsonString(value.upper())
    except ValueError:
        errors.append(FieldError(path, f'invalid timestamp "{value}": expected RFC 3339, like 2026-01-02T15:04:05Z'))
        return None
    return ts


def _timestamp(moment: datetime, nanos: int) -> Timestamp:
    return Timestamp(seconds=calendar.timegm(moment.utctimetuple()), nanos=nanos)


def _encode_json(value: Any, path: str, errors: list[FieldError]) -> bytes:
    """Raw JSON for a bytes field, keeping the key order the user wrote."""
    return raw_json(_plain_json(value, path, errors))


def raw_json(value: Any) -> bytes:
    """The one encoding of embedded JSON, so equal values are equal bytes."""
    return jsonbytes.dumps(value)


def _plain_json(value: Any, path: str, errors: list[FieldError]) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.append(FieldError(path, f"expected a finite number, got {value}"))
            return None
        return value
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return _format_time(_timestamp(moment, value.microsecond * 1000), micro=bool(value.microsecond))
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(FieldError(_join(path, str(key)), f"expected string key, got {_json_type(key)}"))
            else:
                out[key] = _plain_json(item, _join(path, key), errors)
        return out
    if isinstance(value, list | tuple):
        return [_plain_json(item, f"{path}[{i}]", errors) for i, item in enumerate(value)]
    errors.append(FieldError(path, f"expected a JSON value, got {type(value).__name__}"))
    return None


# -- encoding -----------------------------------------------------------------


def to_dict(msg: Message) -> dict[str, Any]:
    """The object in Karmada's JSON shape (Kubernetes omitempty rules; `optional` fields kept when set)."""
    if isinstance(msg, Unstructured):
        out: dict[str, Any] = {}
        if msg.api_version:
            out["apiVersion"] = msg.api_version
        if msg.kind:
            out["kind"] = msg.kind
        if msg.HasField("metadata"):
            out["metadata"] = _message_to_dict(msg.metadata, "metadata")
        if msg.content:
            content = _decode_json(msg.content, "content")
            if not isinstance(content, dict):
                raise ValueError(f"content: expected a JSON object, got {_json_type(content)}")
            out.update(content)
        return out
    return _message_to_dict(msg, "")


def _message_to_dict(msg: Message, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fd in _descriptor(msg).fields:
        value = getattr(msg, fd.name)
        field_path = _join(path, fd.json_name)
        if _is_map(fd):
            if value:
                value_fd = _message_type(fd).fields_by_name["value"]
                # Sorted, as Go's encoding/json prints maps.
                out[fd.json_name] = {k: _value_to_json(value_fd, value[k], f"{field_path}[{k}]") for k in sorted(value)}
        elif fd.is_repeated:
            if len(value):
                out[fd.json_name] = [_value_to_json(fd, v, f"{field_path}[{i}]") for i, v in enumerate(value)]
        elif fd.has_presence:
            if msg.HasField(fd.name):
                out[fd.json_name] = _value_to_json(fd, value, field_path)
        elif value != fd.default_value:
            out[fd.json_name] = _value_to_json(fd, value, field_path)
    return out


def _value_to_json(fd: FieldDescriptor, value: Any, path: str) -> Any:
    if fd.type == _T.TYPE_MESSAGE:
        if _message_type(fd).full_name == Timestamp.DESCRIPTOR.full_name:
            return _format_time(value, micro=fd.full_name in _MICRO_TIME_FIELDS)
        return _message_to_dict(value, path)
    if fd.type == _T.TYPE_BYTES:
        return _decode_json(value, path)
    if fd.type == _T.TYPE_ENUM:
        return _enum_type(fd).values_by_number[value].name
    return value


def _decode_json(raw: bytes, path: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{path}: bytes field does not hold JSON: {e}") from None


def _format_time(ts: Timestamp, micro: bool = False) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=ts.seconds)
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if micro:
        text += f".{ts.nanos // 1000:06d}"
    return text + "Z"


def format_time(ts: Timestamp) -> str:
    """A Timestamp as Kubernetes prints metav1.Time: `2026-11-22T03:13:39Z`."""
    return _format_time(ts)


def parse_time(text: str) -> Timestamp:
    """An RFC 3339 string (fractional seconds and offsets accepted) as a Timestamp."""
    errors: list[FieldError] = []
    ts = _parse_timestamp(text, "", errors)
    if ts is None:
        raise CodecError(errors)
    return ts


# -- JSON and YAML text -------------------------------------------------------


def to_json(obj: Message | Mapping[str, Any], indent: int | None = None) -> str:
    data = to_dict(obj) if isinstance(obj, Message) else obj
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(data, indent=indent, separators=separators, ensure_ascii=False)


if TYPE_CHECKING:
    _BaseLoader = yaml.SafeLoader  # the C loader, where there is one, has the same interface
else:
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """SafeLoader reading YAML the way Kubernetes does: as JSON, strictly.

    Unquoted timestamps stay strings (they are strings in JSON), and a key
    given twice in one mapping is an error instead of silently losing one.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                ident = (key_node.tag, key_node.value)
                if ident in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f'duplicate key "{key_node.value}"', key_node.start_mark
                    )
                seen.add(ident)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # Scripts and manifests read better as literal blocks than as "\n" escapes.
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def utf8_text(data: bytes) -> str:
    """Bytes as text; Kubernetes manifests and JSON are UTF-8, so anything else is named by its first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CodecError([FieldError("", f"not UTF-8 at byte {e.start} (0x{data[e.start]:02x})")]) from None


def load_yaml_documents(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream, skipping empty documents."""
    try:
        documents = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as e:
        raise CodecError([FieldError("", f"invalid YAML: {_yaml_problem(e)}")]) from None
    except RecursionError:
        # Only the pure-Python loader recurses; libyaml stops at 1000 levels with a YAMLError.
        raise CodecError([FieldError("", f"invalid YAML: nested deeper than {limits.MAX_DEPTH} levels")]) from None
    objects: list[dict[str, Any]] = []
    for index, document in enumerate(documents, start=1):
        if document is None:
            continue
        which = f"document {index}: " if len(documents) > 1 else ""
        if not isinstance(document, dict):
            raise CodecError([FieldError("", f"{which}expected object, got {_json_type(document)}")])
        # Before anyone encodes it: an alias bomb is small as loaded and enormous as JSON.
        too_big = limits.shape_problem(document)
        if too_big is not None:
            problem = FieldError(*too_big)
            raise CodecError([FieldError("", f"{which}{problem}") if which else problem])
        objects.append(document)
    return objects


def to_yaml(obj: Message | Mapping[str, Any]) -> str:
    data = to_dict(obj) if isinstance(obj, Message) else dict(obj)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


def dump_yaml_documents(objs: Iterable[Message | Mapping[str, Any]]) -> str:
    return "---\n".join(to_yaml(obj) for obj in objs)


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        problem = error.problem
        if problem == "exceeded maximum nesting depth":
            # libyaml's own bound (1000); the codec's is lower, and one limit is easier to document.
            problem = f"nested deeper than {limits.MAX_DEPTH} levels"
        return f"line {mark.line + 1} column {mark.column + 1}: {problem}"
    return " ".join(str(error).split())


# -- helpers ------------------------------------------------------------------

_JSON_NAMES: dict[str, dict[str, FieldDescriptor]] = {}


def _descriptor(msg: Message) -> Descriptor:
    # At run time the upb descriptor is this class; the stubs keep the two apart.
    return cast(Descriptor, msg.DESCRIPTOR)


def _message_type(fd: FieldDescriptor) -> Descriptor:
    if fd.message_type is None:
        raise TypeError(f"{fd.full_name} is not a message field")
    return fd.message_type


def _enum_type(fd: FieldDescriptor) -> EnumDescriptor:
    if fd.enum_type is None:
        raise TypeError(f"{fd.full_name} is not an enum field")
    return fd.enum_type


def _fields_by_json_name(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    fields = _JSON_NAMES.get(descriptor.full_name)
    if fields is None:
        fields = {fd.json_name: fd for fd in descriptor.fields}
        _JSON_NAMES[descriptor.full_name] = fields
    return fields


def _is_map(fd: FieldDescriptor) -> bool:
    return fd.type == _T.TYPE_MESSAGE and _message_type(fd).GetOptions().map_entry


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _join(path: str, key: Any) -> str:
    key = limits.path_key(str(key))
    return f"{path}.{key}" if path else key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__
