"""ObjectMeta rules every kind shares: name, namespace, label and annotation syntax."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from flotilla.api.codec import FieldError
from flotilla.api.limits import MAX_ANNOTATIONS_BYTES
from flotilla.api.v1.meta_pb2 import ObjectMeta
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, key, required, too_long

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
    yield from validate_annotations(meta, path)


def validate_annotations(meta: ObjectMeta, path: str = "metadata") -> Iterator[FieldError]:
    annotations_path = child(path, "annotations")
    for annotation in meta.annotations:
        yield from check(key(annotations_path, annotation), annotation, names.qualified_name)
    # Counted as Kubernetes does (ValidateAnnotationsSize): the bytes of every key and value.
    size = sum(len(k.encode()) + len(v.encode()) for k, v in meta.annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        yield too_long(annotations_path, MAX_ANNOTATIONS_BYTES)


def validate_labels(meta: ObjectMeta, path: str = "metadata") -> Iterator[FieldError]:
    labels_path = child(path, "labels")
    for label in sorted(meta.labels):
        label_path = key(labels_path, label)
        yield from check(label_path, label, names.qualified_name)
        yield from check(label_path, meta.labels[label], names.label_value)
