"""Every number of seconds an object carries is bounded (flotilla.api.bounds), checked by walking
the object's fields rather than by each kind's rules, so a field added later is covered too:
`tolerationSeconds` of 3e11 once made every reconcile of its binding raise (a date past year 9999).
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from flotilla.api.bounds import MAX_SECONDS
from flotilla.api.codec import FieldError
from services.webhook.rules.fields import child, index, invalid

_INTEGER_TYPES = frozenset({FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT32,
                            FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64})
_SECONDS_SUFFIX = "_seconds"


def seconds_out_of_bounds(obj: Message, path: str = "") -> Iterator[FieldError]:
    """A FieldError for each `...Seconds` field beyond ±MAX_SECONDS, named as the YAML names it."""
    for field, value in obj.ListFields():
        name = child(path, field.json_name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                if field.message_type is not None and field.message_type.GetOptions().map_entry:
                    continue
                for i, item in enumerate(value):
                    yield from seconds_out_of_bounds(item, index(name, i))
            else:
                yield from seconds_out_of_bounds(value, name)
        elif field.type in _INTEGER_TYPES and field.name.endswith(_SECONDS_SUFFIX) \
                and not field.is_repeated and abs(value) > MAX_SECONDS:
            yield invalid(name, value, f"must be between {-MAX_SECONDS} and {MAX_SECONDS} seconds")
