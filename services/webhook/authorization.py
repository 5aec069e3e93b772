"""Who may do what through the plane's API: a Pull agent what its cluster needs
(flotilla.security.agents), then Kubernetes RBAC over the stored Role, ClusterRole, RoleBinding
and ClusterRoleBinding objects and the built-in bootstrap policy (flotilla.security.rbac), with
Kubernetes' guard against granting more than one holds.

Every replica keeps the RBAC objects in informers and evaluates each request in memory. Until
they have been read, every request is refused (fail closed): an empty cache would deny the
users a binding allows, and nothing must be allowed that the policy does not allow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from google.protobuf.message import Message

from flotilla.api import codec, registry
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.security import agents, rbac
from flotilla.security.rbac import Decision, Policy, Request, User
from flotilla.store.informer import Informer

log = logging.getLogger(__name__)

RBAC_TYPES = {kind: registry.template_type(rbac.API_VERSION, kind) for kind in rbac.KINDS}
NOT_READY = "the authorizer has not read the RBAC objects yet; try again"
ALWAYS_ALLOW = "authorization is off (--authorization-mode AlwaysAllow)"
# How many of the permissions a role would grant beyond the caller's own a denial lists.
_MISSING_SHOWN = 5


def request_for(verb: str, rt: registry.ResourceType[Any], namespace: str, name: str) -> Request:
    return Request(verb, rt.group, rt.plural, namespace if rt.namespaced else "", name)


class Authorizer(Protocol):
    async def wait_ready(self, timeout: float) -> bool:
        """Whether decisions can be taken (the RBAC objects read), waiting up to `timeout` seconds."""
        ...

    def authorize(self, user: User, request: Request) -> Decision: ...

    def admit(self, user: User, request: Request, obj: Message) -> Decision:
        """Whether `user` may write this object as `request` (request_for) asks."""
        ...


class AlwaysAllow:
    """For a plane without TLS, where no caller has an identity to authorize."""

    async def wait_ready(self, timeout: float) -> bool:
        return True

    def authorize(self, user: User, request: Request) -> Decision:
        return Decision(True, ALWAYS_ALLOW)

    def admit(self, user: User, request: Request, obj: Message) -> Decision:
        return Decision(True, ALWAYS_ALLOW)


class RBACAuthorizer:
    def __init__(self, informers: Mapping[str, Informer[Unstructured]]) -> None:
        self.informers = informers
        self._policy: Policy | None = None
        for informer in informers.values():
            informer.add_handler(self._changed)

    def _changed(self, *_: object) -> None:
        self._policy = None

    @property
    def ready(self) -> bool:
        return all(informer.synced for informer in self.informers.values())

    async def wait_ready(self, timeout: float) -> bool:
        if self.ready:  # every request asks: no task to start once the informers have synced
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(i.wait_synced() for i in self.informers.values())), timeout)
        return self.ready

    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = self._read()
        return self._policy

    def _read(self) -> Policy:
        roles, bindings = [], []
        for kind, informer in self.informers.items():
            for obj in informer.list():
                try:
                    doc = codec.to_dict(obj)
                    if kind in (rbac.ROLE, rbac.CLUSTER_ROLE):
                        roles.append(rbac.role_of(doc))
                    else:
                        bindings.append(rbac.binding_of(doc))
                except (rbac.PolicyError, ValueError) as e:
                    # Admission refuses such objects; one written around it grants nothing.
                    log.warning("event=rbac_object_ignored kind=%s name=%s/%s error=%s", kind,
                                obj.metadata.namespace, obj.metadata.name, e)
        return Policy(roles, bindings)

    def authorize(self, user: User, request: Request) -> Decision:
        # A Pull agent's own requests first, as Kubernetes asks its Node authorizer before RBAC.
        if (own := agents.authorize(user, request)) is not None:
            return own
        if not self.ready:
            return Decision(False, NOT_READY)
        return self.policy().authorize(user, request)

    def admit(self, user: User, request: Request, obj: Message) -> Decision:
        decision = self.authorize(user, request)
        if not decision.allowed or request.verb == "delete" or not isinstance(obj, Unstructured) \
                or obj.api_version != rbac.API_VERSION or obj.kind not in rbac.KINDS:
            return decision
        refusal = escalation(self.policy(), user, codec.to_dict(obj))
        return Decision(False, refusal) if refusal else decision


def escalation(policy: Policy, user: User, doc: dict[str, Any]) -> str:
    """Why writing this role or binding would grant `user` more than it holds ("" when it would
    not), as Kubernetes checks it: a role's rules, or a bound role's, must be covered by the
    user's own rules where it applies, unless the user may `escalate` (roles) or `bind` (bindings)."""
    kind = doc["kind"]
    namespaced = kind in (rbac.ROLE, rbac.ROLE_BINDING)
    meta = doc.get("metadata") or {}
    namespace = str(meta.get("namespace") or "") if namespaced else ""
    name = str(meta.get("name") or "")
    if kind in (rbac.ROLE, rbac.CLUSTER_ROLE):
        plural = "roles" if namespaced else "clusterroles"
        if policy.authorize(user, Request("escalate", rbac.GROUP, plural, namespace, name)).allowed:
            return ""
        role = rbac.role_of(doc)
        if role.aggregation:
            return (f'User "{user.name}" cannot set an aggregationRule: it needs the escalate verb on '
                    f'clusterroles, as an aggregating role takes the rules of roles others label')
        requested = role.rules
    else:
        binding = rbac.binding_of(doc)
        plural = "roles" if binding.role_kind == rbac.ROLE else "clusterroles"
        if policy.authorize(user, Request("bind", rbac.GROUP, plural, namespace, binding.role_name)).allowed:
            return ""
        if binding.role_kind == rbac.CLUSTER_ROLE:
            requested = policy.cluster_role_rules(binding.role_name)
        else:
            bound = policy.roles.get((namespace, binding.role_name))
            requested = bound.rules if bound is not None else ()
    missing = rbac.covers([rule for _, rule in policy.rules_for(user, namespace)], requested)
    if not missing:
        return ""
    shown = "; ".join(f"{m.verb} {m.resource}{'.' + m.api_group if m.api_group else ''}"
                      f"{' ' + repr(m.name) if m.name else ''}" for m in missing[:_MISSING_SHOWN])
    more = f" and {len(missing) - _MISSING_SHOWN} more" if len(missing) > _MISSING_SHOWN else ""
    groups = ", ".join(sorted(user.groups))
    return (f'User "{user.name}" (groups [{groups}]) is attempting to grant RBAC permissions not currently '
            f"held: {shown}{more}")
