"""The detector: resource templates x propagation policies -> ResourceBindings and
ClusterResourceBindings (the dependencies distributor and the policy finalizers, which Karmada's
detector also runs, are services/executor/dependency_distributor.py and policy_finalizers.py).

`TemplateReconciler`, keyed by template, `<apiVersion>/<kind>:<namespace>/<name>`: reads the template
  and its binding from etcd, picks the claiming policy with `policy_match`, and creates the
  binding, brings the fields the policy decides up to date (never spec.clusters,
  gracefulEvictionTasks, requiredBy or anything else the scheduler, the taint manager or the
  dependencies distributor own), or — no policy claiming it any more — takes the claim off and
  otherwise keeps it, as Karmada does (it keeps running where it was; nothing reschedules it).
  A template that is gone takes its binding with it; a binding left by an earlier template of
  the same name (another UID) is deleted first and made anew. Templates are never written.

`schedulePriority` (priorityClassSource KubePriorityClass) is resolved here, as Karmada's
  detector does: the binding's `spec.schedulePriority.priority` is the `value` of the
  `scheduling.k8s.io/v1` PriorityClass the policy names (a resource template like any other).
  A PriorityClass that does not exist is Karmada's "Apply policy failed": a Warning event on the
  template, the binding neither made nor changed, retried with backoff until it appears.
  Like Karmada, a PriorityClass's later change reaches a binding only with its next policy or
  template change.

`activationPreference: Lazy`: a Lazy policy is applied only when the template changed since
  the detector last looked at it, never because only the policy (or the binding) did — Karmada
  marks the keys a Lazy policy's change enqueues and skips them; here the reconciler remembers
  each template's specification (`specification`) instead, so the rule holds whatever brought
  the key. As in Karmada (whose informers' initial list enqueues every template unmarked), the
  first look after the executor starts counts as a change.

With the feature gate MultiplePodTemplatesScheduling (alpha and off, as in Karmada), a kind with a
  `componentResource` script gets the binding's `spec.components` from its `GetComponents(template)`
  instead of replicas (Karmada's detector reads components first, and then no replicas); a
  failing script is handled as a failing `replicaResource` one below (Warning GetComponentsFailed).

Replicas of a kind with a ResourceInterpreterCustomization `replicaResource` script are that
  script's `GetReplicas(template)` (run in the interpreter pool, before the pure
  `build_binding`), so a custom workload (a FlinkDeployment) is divided like a Deployment. A
  script that fails, overruns or answers nonsense never makes a binding from a guess (0
  replicas would make a Divided policy copy the whole workload to every cluster): the binding is
  neither made nor changed, a Warning event InterpretReplicaFailed goes to the template, and the
  key is retried with backoff (Karmada's detector fails its apply the same way). While a
  customization is stored but cannot be read, its target is unknown: no binding of a kind without
  Karmada's native replica rule is made or changed (the same event), as health reads Unknown then.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from flotilla.aio.clock import Clock
from flotilla.api import keys, registry
from flotilla.api.bindings import CLUSTER_RESOURCE_BINDING, RESOURCE_BINDING, Binding, kind_named
from flotilla.api.keys import split_key
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import meta_pb2, policy_pb2, work_pb2
from flotilla.interpreter.customized import GET_COMPONENTS, GET_REPLICAS, CustomizedInterpreter, ReplicaResource
from flotilla.rules.binding_builder import (
    PRIORITY_CLASS_API,
    build_binding,
    has_native_replicas,
    priority_class_value,
    template_object,
)
from flotilla.runtime.controller import Result
from flotilla.runtime.own_writes import OwnWrites
from flotilla.store import AlreadyExists, Conflict, NotFound, ObjectStore
from flotilla.store.base import copy_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import cached_read, policy_match, works

log = logging.getLogger(__name__)

SELECTOR_INDEX = "selector"
CLAIM_INDEX = "claim"
DEPENDENCIES_INDEX = "dependencies"

P = TypeVar("P", bound=policy_match.Policy)


# The spec fields a policy decides (Karmada's detector updates exactly these on an existing binding).
POLICY_OWNED_SPEC_FIELDS = (
    "resource", "replica_requirements", "replicas", "components", "propagate_deps", "scheduler_name", "placement",
    "failover", "conflict_resolution", "preserve_resources_on_deletion", "schedule_priority",
)


LAZY = "Lazy"


class PriorityClassNotFound(Exception):
    """The PriorityClass a policy's schedulePriority names does not exist (retried with backoff)."""


class ReplicasNotInterpreted(Exception):
    """The kind's GetReplicas or GetComponents script gave no answer: the binding keeps what it
    had (retried with backoff)."""


Specification = tuple[str, int, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], bool]


def specification(template: meta_pb2.Unstructured) -> Specification:
    """What Karmada's SpecificationChanged compares, compactly: the store raises a template's
    generation whenever its content other than status changes (routing.specification_changed)."""
    meta = template.metadata
    return (meta.uid, meta.generation, tuple(sorted(meta.labels.items())), tuple(sorted(meta.annotations.items())),
            meta.HasField("deletion_timestamp"))


def _candidates(policies: Informer[P], index_keys: list[str]) -> list[P]:
    """The policies that can select a template (`policy_match.selector_index`), each once.

    Undecodable while some stored policy never decoded: it may be the one that claims the
    template, and a choice made without it could hand the binding to another policy (and move
    it) or unclaim it. The template waits for that policy to read, or to be deleted."""
    policies.check_complete()
    found: dict[str, P] = {}
    for value in index_keys:
        for policy in policies.by_index(SELECTOR_INDEX, value):
            found.setdefault(policy.metadata.name, policy)
    return list(found.values())


# -- keys ------------------------------------------------------------------------------------


def template_key(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{api_version}/{kind}:{keys.object_key(namespace, name)}"


def template_key_of(template: meta_pb2.Unstructured) -> str:
    return template_key(template.api_version, template.kind, template.metadata.namespace, template.metadata.name)


def template_key_of_binding(binding: Binding) -> str:
    resource = binding.spec.resource
    return template_key(resource.api_version, resource.kind, resource.namespace, resource.name)


def parse_template_key(key: str) -> tuple[str, str, str, str]:
    """-> (apiVersion, kind, namespace, name). Names may hold ':' (RBAC); apiVersion and kind never do."""
    type_part, _, object_key = key.partition(":")
    api_version, _, kind = type_part.rpartition("/")
    namespace, name = split_key(object_key)
    return api_version, kind, namespace, name


def policy_key(policy: policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy) -> str:
    return policy_match.policy_claim_key(policy)


# -- rules on bindings ------------------------------------------------------------------------


def binds(binding: Binding, kind: str, namespace: str, name: str) -> bool:
    """Whether the binding is the one of this template (two templates can map to one binding name)."""
    resource = binding.spec.resource
    return (resource.kind, resource.namespace, resource.name) == (kind, namespace, name)


def owner_replaced(binding: Binding, template: meta_pb2.Unstructured) -> bool:
    """The binding belongs to an earlier template of the same name (Karmada's owner-UID check)."""
    owners = [ref.uid for ref in binding.metadata.owner_references if ref.controller and ref.uid]
    return bool(owners) and bool(template.metadata.uid) and template.metadata.uid not in owners


def merge_binding(existing: Binding, desired: Binding) -> Binding:
    """`existing` with what the policy decides taken from `desired`: the claim (any other
    policy's claim removed), the policy-owned spec fields, suspension of dispatching, the owner
    reference and the finalizer. Everything else — the binding's own permanent id, the
    scheduler's result and annotations, eviction tasks, requiredBy, status — is kept. The
    template's resourceVersion is recorded only along with some other change."""
    merged = copy_of(existing)
    meta = merged.metadata
    labels, annotations = policy_match.without_claim(meta.labels, meta.annotations)
    labels.update(desired.metadata.labels)
    annotations.update(desired.metadata.annotations)
    meta.ClearField("labels")
    meta.labels.update(labels)
    meta.ClearField("annotations")
    meta.annotations.update(annotations)
    meta.finalizers.extend(f for f in desired.metadata.finalizers if f not in meta.finalizers)
    del meta.owner_references[:]
    meta.owner_references.extend(desired.metadata.owner_references)
    spec, source = merged.spec, desired.spec
    for name in POLICY_OWNED_SPEC_FIELDS:
        fd = spec.DESCRIPTOR.fields_by_name[name]
        if fd.is_repeated:
            spec.ClearField(name)
            getattr(spec, name).extend(getattr(source, name))
            continue
        if fd.message_type is None and not fd.has_presence:
            setattr(spec, name, getattr(source, name))
            continue
        spec.ClearField(name)
        if source.HasField(name):
            if fd.message_type is not None:
                getattr(spec, name).CopyFrom(getattr(source, name))
            else:
                setattr(spec, name, getattr(source, name))
    # Scheduling suspension is not the policy's to decide; dispatching suspension is.
    scheduling = spec.suspension.scheduling if spec.suspension.HasField("scheduling") else None
    spec.ClearField("suspension")
    if source.HasField("suspension"):
        spec.suspension.CopyFrom(source.suspension)
    if scheduling is not None:
        spec.suspension.scheduling = scheduling
    # The template's resourceVersion moves with every status write too: alone, it is no reason
    # for a new binding generation (template changes reach the Works without it).
    unchanged = copy_of(merged)
    unchanged.spec.resource.resource_version = existing.spec.resource.resource_version
    return unchanged if unchanged == existing else merged


def unclaimed(existing: Binding) -> Binding:
    """`existing` with every policy claim taken off (the policy is gone or no longer matches)."""
    result = copy_of(existing)
    labels, annotations = policy_match.without_claim(existing.metadata.labels, existing.metadata.annotations)
    result.metadata.ClearField("labels")
    result.metadata.labels.update(labels)
    result.metadata.ClearField("annotations")
    result.metadata.annotations.update(annotations)
    return result


# -- reconcilers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DetectorConfig:
    # --skipped-propagating-namespaces (full-match regular expressions).
    skipped_namespaces: tuple[str, ...] = policy_match.DEFAULT_SKIPPED_NAMESPACES
    # Feature gate PropagationPolicyPreemption (alpha, off in Karmada).
    preemption: bool = False
    # Feature gate MultiplePodTemplatesScheduling (alpha, off in Karmada): componentResource read.
    multiple_pod_templates: bool = False


class TemplateReconciler:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        policies: Informer[policy_pb2.PropagationPolicy],
        cluster_policies: Informer[policy_pb2.ClusterPropagationPolicy],
        config: DetectorConfig | None = None,
        events: EventRecorder | None = None,
        templates: Mapping[str, Informer[meta_pb2.Unstructured]] | None = None,
        bindings: Mapping[str, Informer[Binding]] | None = None,
        interpreter: CustomizedInterpreter | None = None,
        unreadable: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self.store = store
        # The customizations' replicaResource scripts; `unreadable`: the customizations stored but
        # not decoded (while there is one, a kind without a native rule may have a script unknown).
        self.interpreter = interpreter
        self.unreadable = unreadable
        self.clock = clock
        self.policies = policies
        self.cluster_policies = cluster_policies
        self.config = config or DetectorConfig()
        self.events = events
        # Template informers by etcd resource and binding informers by kind, as the executor
        # starts them (controllers.py); what is missing or not yet synced is read from etcd.
        self.templates = templates if templates is not None else {}
        self.bindings = bindings if bindings is not None else {}
        # Template key -> its specification when last decided on, and the one being decided on
        # (kept only once the decision is made: one that failed is made again as a change).
        self._seen: dict[str, Specification] = {}
        self._looking: dict[str, Specification] = {}
        # The bindings this detector created: the watch's echo of each would only bring its
        # template back here to be decided the same (routing.binding_came_or_went_elsewhere).
        self.created = OwnWrites()

    async def reconcile(self, key: str) -> Result | None:
        api_version, kind, namespace, name = parse_template_key(key)
        try:
            rt = registry.for_kind(api_version, kind)
        except registry.UnknownResourceError:
            return None
        # Karmada's detector skips every karmada.io group: its kinds are never templates, even one
        # stored before it was refused, or one still stored as a template until it is built in.
        if not rt.is_template or registry.is_karmada_group(rt.group):
            return None
        # From the informers first; a decision made on a copy that has changed since fails its
        # compare-and-swap, and is made again on what etcd holds.
        self._looking.pop(key, None)  # left by a pass that failed
        for fresh in (False, True):
            try:
                result = await self._decide(key, rt, kind, namespace, name, fresh)
            except (Conflict, AlreadyExists):
                continue
            seen = self._looking.pop(key, None)
            if seen is None:
                self._seen.pop(key, None)
            else:
                self._seen[key] = seen
            return result
        # Someone keeps writing the binding: decide again on what is there next time.
        return Result(requeue_after=0)

    async def _decide(self, key: str, rt: ResourceType[meta_pb2.Unstructured], kind: str, namespace: str,
                      name: str, fresh: bool) -> Result | None:
        binding_kind = RESOURCE_BINDING if rt.namespaced else CLUSTER_RESOURCE_BINDING
        binding_rt: ResourceType[Binding] = binding_kind.resource_type
        binding_namespace = namespace if rt.namespaced else ""
        binding_name = keys.binding_name(name, kind)
        template = await cached_read.read(self.store, self.templates.get(rt.resource), rt, namespace, name, fresh)
        binding = await cached_read.read(self.store, self.bindings.get(binding_rt.kind), binding_rt,
                                         binding_namespace, binding_name, fresh)
        if binding is not None and not binds(binding, kind, namespace, name):
            log.warning("event=skip-template template=%s reason=BindingNameTaken binding=%s", key, binding_name)
            return None
        gone = template is None or works.is_deleting(template)
        if binding is not None and (template is None or gone or owner_replaced(binding, template)):
            if not works.is_deleting(binding):
                with contextlib.suppress(NotFound):
                    # The version read, so a binding made since for a new template is not the one deleted.
                    await self.store.delete(binding_rt, binding_namespace, binding_name,
                                            resource_version=binding.metadata.resource_version)
                log.info("event=delete-binding template=%s binding=%s reason=%s", key, binding_name,
                         "TemplateDeleted" if gone else "TemplateReplaced")
            # Its deletion event brings the template back here, to bind a replaced template anew.
            return None
        if template is None or gone or (binding is not None and works.is_deleting(binding)):
            return None
        self._looking[key] = spec = specification(template)
        template_changed = self._seen.get(key) != spec
        if policy_match.namespace_skipped(namespace, self.config.skipped_namespaces):
            return None
        claim = policy_match.claim_of(binding.metadata) if binding is not None else None
        policy = policy_match.choose_policy(
            template, _candidates(self.policies, policy_match.candidate_keys(template, namespace)),
            _candidates(self.cluster_policies, policy_match.candidate_keys(template, "")),
            claim, self.config.preemption,
        )
        if policy is None:
            if binding is not None and claim is not None:
                await self.store.update(unclaimed(binding), original=binding)
                log.info("event=unclaim-binding template=%s binding=%s policy=%s", key, binding_name, claim.key)
            return None
        if policy.spec.activation_preference == LAZY and not template_changed:
            log.info("event=skip-template template=%s reason=LazyActivation policy=%s", key, policy_key(policy))
            return None
        priority = await self._schedule_priority(template, policy, fresh)
        components = await self._interpret_components(template)
        replicas = await self._interpret_replicas(template) if components is None else None
        written = await self._apply(template, policy, binding, binding_rt, priority, replicas, components)
        if written and self.events is not None:
            await self.events.normal(template, "ApplyPolicySucceed", f"Apply policy({_describe(policy)}) succeed")
        return None

    async def _schedule_priority(self, template: meta_pb2.Unstructured, policy: policy_match.Policy,
                                 fresh: bool) -> int | None:
        """The value of the PriorityClass the policy's schedulePriority names; None without one.

        Raises PriorityClassNotFound (after a Warning event, as Karmada's ApplyPolicyFailed) when
        it does not exist: Karmada neither makes nor updates the binding then, and neither do we."""
        if not policy.spec.HasField("schedule_priority"):
            return None
        name = policy.spec.schedule_priority.priority_class_name
        rt = registry.for_kind(*PRIORITY_CLASS_API)
        priority_class = await cached_read.read(self.store, self.templates.get(rt.resource), rt, "", name, fresh)
        if priority_class is None and not fresh:
            # An informer may lag a PriorityClass applied just before its policy: ask etcd.
            priority_class = await self.store.try_get(rt, "", name)
        if priority_class is None:
            message = f'priorityclasses.scheduling.k8s.io "{name}" not found'
            if self.events is not None:
                await self.events.warning(template, "ApplyPolicyFailed",
                                          f"Apply policy({_describe(policy)}) failed: {message}")
            raise PriorityClassNotFound(message)
        return priority_class_value(priority_class)

    async def _interpret_components(self, template: meta_pb2.Unstructured) -> list[work_pb2.Component] | None:
        """The kind's GetComponents answer, read first as Karmada's detector does, and only under
        MultiplePodTemplatesScheduling; None without the gate or a script (GetReplicas decides).

        Raises ReplicasNotInterpreted, after a Warning event GetComponentsFailed, when there is a
        script and no answer: the binding keeps what it had."""
        api_version, kind = template.api_version, template.kind
        if not self.config.multiple_pod_templates or self.interpreter is None \
                or not self.interpreter.has(GET_COMPONENTS, api_version, kind):
            return None
        answer = await self.interpreter.get_components(template_object(template))
        if answer.ok:
            components: list[work_pb2.Component] = answer.value
            return components
        error = f"{answer.customization}: {answer.error}" if answer.customization else answer.error
        await self._not_interpreted(template, "GetComponentsFailed", "get components", error)

    async def _interpret_replicas(self, template: meta_pb2.Unstructured) -> ReplicaResource | None:
        """The kind's GetReplicas answer; None when the kind has no script (the native rule decides).

        Raises ReplicasNotInterpreted, after a Warning event, when there is a script and no answer."""
        api_version, kind = template.api_version, template.kind
        unknown = self.unreadable() if self.unreadable is not None else ()
        if unknown and not has_native_replicas(api_version, kind):
            error = f"ResourceInterpreterCustomization {unknown[0]} cannot be read"
        elif self.interpreter is None or not self.interpreter.has(GET_REPLICAS, api_version, kind):
            return None
        else:
            answer = await self.interpreter.get_replicas(template_object(template))
            if answer.ok:
                resource: ReplicaResource = answer.value
                return resource
            error = f"{answer.customization}: {answer.error}" if answer.customization else answer.error
        await self._not_interpreted(template, "InterpretReplicaFailed", "interpret replicas", error)

    async def _not_interpreted(self, template: meta_pb2.Unstructured, reason: str, what: str, error: str) -> NoReturn:
        """A Warning event `reason` on the template, and ReplicasNotInterpreted: the binding keeps what it had."""
        message = f"Failed to {what} of {template.kind} {template_key_of(template)}: {error}"
        log.warning("event=%s-failed template=%s error=%s", what.replace(" ", "-"), template_key_of(template), error)
        if self.events is not None:
            await self.events.warning(template, reason, message)
        raise ReplicasNotInterpreted(message)

    async def _apply(self, template: meta_pb2.Unstructured, policy: policy_match.Policy, binding: Binding | None,
                     binding_rt: ResourceType[Binding], priority: int | None,
                     replicas: ReplicaResource | None = None,
                     components: list[work_pb2.Component] | None = None) -> bool:
        desired = build_binding(template, policy, priority,
                                None if replicas is None else (replicas.replicas, replicas.requirements),
                                components)
        label = kind_named(binding_rt.kind).permanent_id_label
        key = template_key_of(template)
        if binding is None:
            desired.metadata.labels[label] = str(uuid.uuid4())
            created = await self.store.create(desired)
            self.created.record(created)
            # In the cache before the watch brings it: a pass for the template (deleted, say)
            # that comes first must find the binding, since its echo brings no pass here.
            informer = self.bindings.get(binding_rt.kind)
            if informer is not None:
                await informer.assume(created)
            log.info("event=create-binding template=%s binding=%s policy=%s", key, desired.metadata.name,
                     policy_key(policy))
            return True
        merged = merge_binding(binding, desired)
        if not merged.metadata.labels.get(label):
            merged.metadata.labels[label] = str(uuid.uuid4())
        if merged == binding:
            return False
        await self.store.update(merged, original=binding)
        log.info("event=update-binding template=%s binding=%s policy=%s", key, merged.metadata.name, policy_key(policy))
        return True


def _describe(policy: policy_match.Policy) -> str:
    return keys.object_key(policy.metadata.namespace, policy.metadata.name)
