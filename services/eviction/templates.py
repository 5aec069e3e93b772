"""The resource template a binding stands for: its Events go there as well as on the binding,
as Karmada records them, so `describe deployment` tells the story too."""

from __future__ import annotations

from google.protobuf.message import Message

from flotilla.api import registry
from flotilla.api.bindings import Binding
from flotilla.store import ObjectStore


async def template_of(store: ObjectStore, binding: Binding) -> Message | None:
    resource = binding.spec.resource
    try:
        rt = registry.for_kind(resource.api_version, resource.kind)
    except registry.UnknownResourceError:
        return None
    template: Message | None = await store.try_get(rt, resource.namespace, resource.name)
    return template
