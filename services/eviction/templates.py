"""The resource template a binding stands for: its Events go there as well as on the binding,
as Karmada records them, so `describe deployment` tells the story too."""

from __future__ import annotations

from google.protobuf.message import Message

from flotilla.api import registry
from flotilla.api.bindings import Binding
from flotilla.api.v1 import meta_pb2


def template_of(binding: Binding) -> Message | None:
    """The template as the binding refers to it, as Karmada records a template's Events: from the
    binding's `spec.resource`, without reading the template (a read per evicted binding)."""
    resource = binding.spec.resource
    try:
        registry.for_kind(resource.api_version, resource.kind)
    except registry.UnknownResourceError:
        return None
    template = meta_pb2.Unstructured(api_version=resource.api_version, kind=resource.kind)
    template.metadata.namespace, template.metadata.name = resource.namespace, resource.name
    template.metadata.uid = resource.uid
    return template
