"""ObjectMeta rules every kind shares: name, namespace, label and annotation syntax."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.meta_pb2 import ObjectMeta
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, key, required

NameRule = Callable[[str], list[str]]


def validate_metadata(
    meta: ObjectMeta, namespaced: bool, name_rule: NameRule = names.dns1123_subdomain, path: str = "metadata"
) -> Iterator[FieldError]:
    name_path = child(path, "name")
    if not meta.name:
        yield required(name_path)
    else:
        yield from check(name_path, meta.name, name_rule)
    namespace_path = child(path, "namespace")
    if namespaced:
        # The API layer fills in "default" before admission; an empty
        # namespace here means a caller skipped that, not a user mistake.
        if not meta.namespace:
            yield required(namespace_path)
        else:
            yield from check(namespace_path, meta.namespace, names.dns1123_label)
    yield from validate_labels(meta, path)
    for annotation in meta.annotations:
        yield from check(key(child(path, "annotations"), annotation), annotation, names.qualified_name)


def validate_labels(meta: ObjectMeta, path: str = "metadata") -> Iterator[FieldError]:
    labels_path = child(path, "labels")
    for label in sorted(meta.labels):
        label_path = key(labels_path, label)
        yield from check(label_path, label, names.qualified_name)
        yield from check(label_path, meta.labels[label], names.label_value)
