"""gRPC face of admission: JSON in, JSON and field violations out.

A request that is too large, not UTF-8, not JSON or too deeply nested is answered like
any rejected object, with one violation, before admission sees it.

Writes (Apply, Delete) are attributed: with TLS on, the caller's client certificate's common
name is recorded on the object (annotation flotilla.io/applied-by) and in an Event, and a
caller without one is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message
from opentelemetry import trace

from flotilla.api import codec, registry
from flotilla.api.limits import MAX_DOCUMENT_BYTES
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.security.rbac import ACCESS_REVIEW, User
from flotilla.security.rbac import Request as Access
from flotilla.store import Conflict, NotFound
from flotilla.store.base import meta_of, object_key_of
from flotilla.store.events import EventRecorder
from services.rpc import abort
from services.webhook.admission import (
    DELETE,
    UNCHANGED,
    Admission,
    Authorize,
    Forbidden,
    Outcome,
    Review,
    deletable_type,
)
from services.webhook.authorization import request_for
from services.webhook.callers import ANONYMOUS, Gate
from services.webhook.metrics import WEBHOOK_REQUESTS

log = logging.getLogger(__name__)
SERVICE = webhook_pb2.DESCRIPTOR.services_by_name["Webhook"].full_name
tracer = trace.get_tracer("flotilla.webhook")


def _response(review: Review, result: str = "") -> webhook_pb2.AdmissionResponse:
    response = webhook_pb2.AdmissionResponse(allowed=review.allowed, result=result)
    if review.obj is not None:
        response.object_json = codec.to_json(review.obj)
    response.violations.extend(webhook_pb2.FieldViolation(path=e.path, reason=e.reason) for e in review.errors)
    response.warnings.extend(review.warnings)
    return response


class Undecodable:
    """What the webhook receives instead of an AdmissionRequest whose bytes do not parse
    (protobuf refuses a string field that is not UTF-8, before any servicer code runs)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


Request = webhook_pb2.AdmissionRequest | Undecodable


def parse_request(raw: bytes) -> Request:
    try:
        return webhook_pb2.AdmissionRequest.FromString(raw)
    except DecodeError as e:
        return Undecodable(_undecodable_problem(raw) or f"not an AdmissionRequest: {e}")


def _undecodable_problem(raw: bytes) -> str | None:
    """Which byte of object_json is not UTF-8 (field 1: a 0x0a tag, a varint length, the text)."""
    if raw[:1] != b"\x0a":
        return None
    length = shift = 0
    pos = 1
    while pos < len(raw):
        byte = raw[pos]
        length |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            break
    try:
        codec.utf8_text(raw[pos:pos + length])
    except codec.CodecError as e:
        return str(e)
    return None


def document(request: Request) -> Any | Review:
    """The request's JSON value, or a Review naming why there is none."""
    if isinstance(request, Undecodable):
        return Review(None, errors=[codec.FieldError("", request.problem)])
    size = len(request.object_json.encode())
    if size > MAX_DOCUMENT_BYTES:
        return Review(None, errors=[codec.FieldError(
            "", f"the document is larger than {MAX_DOCUMENT_BYTES} bytes ({size} bytes)")])
    try:
        return codec.load_json(request.object_json)
    except codec.CodecError as e:
        return Review(None, errors=e.errors)


def _kind(obj: Message) -> str:
    kind: str = getattr(obj, "kind")  # noqa: B009 - every kind's message has one; Message does not
    return kind


def applied_by(user: User) -> str:
    """Who a write is recorded as made by: "" for an anonymous caller, whom nothing vouches for."""
    return "" if user.name == ANONYMOUS else user.name


class WebhookServicer(webhook_pb2_grpc.WebhookServicer):
    def __init__(self, admission: Admission, events: EventRecorder | None = None, gate: Gate | None = None) -> None:
        self.admission = admission
        self.events = events
        self.gate = gate or Gate()
        self.authorizer = self.gate.authorizer
        self._recording: set[asyncio.Task[None]] = set()

    def _authorize(self, method: str, user: User) -> Authorize:
        """The check admission runs once it knows whether the write creates or updates."""
        def check(verb: str, obj: Message) -> None:
            meta = meta_of(obj)
            request = request_for(verb, registry.for_object(obj), meta.namespace, meta.name)
            decision = self.gate.decide(method, user, request, self.authorizer.admit(user, request, obj))
            if not decision.allowed:
                raise Forbidden(decision.reason)
        return check

    def _record(self, obj: Message, reason: str, result: str, identity: str) -> None:
        """The Event is written after the answer, best effort: a write's latency stays the write's."""
        if self.events is None:
            return
        task = asyncio.create_task(
            self.events.normal(obj, reason, f"{result} by {identity or 'an unauthenticated client'}"))
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    async def Apply(self, request: Request, context: grpc.aio.ServicerContext
                    ) -> webhook_pb2.AdmissionResponse:
        user = await self.gate.caller(context)
        identity = applied_by(user)
        doc = document(request)
        if isinstance(doc, Review):
            return _response(doc)
        with tracer.start_as_current_span("webhook.apply") as span:
            try:
                outcome: Outcome = await self.admission.apply(doc, applied_by=identity,
                                                              authorize=self._authorize("Apply", user))
            except Forbidden as e:
                await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))
            except Conflict as e:
                await abort(context, grpc.StatusCode.ABORTED, str(e))
            review = outcome.review
            if review.obj is not None:
                span.set_attribute("flotilla.object", f"{_kind(review.obj)}/{meta_of(review.obj).name}")
                # Only a review with an object can be allowed.
                if review.allowed:
                    log.info("event=apply kind=%s key=%s result=%s by=%s", _kind(review.obj),
                             object_key_of(review.obj), outcome.result, identity or "-")
                    if outcome.result != UNCHANGED:
                        self._record(review.obj, "Applied", outcome.result, identity)
            return _response(review, outcome.result)

    async def Default(self, request: Request, context: grpc.aio.ServicerContext
                      ) -> webhook_pb2.AdmissionResponse:
        return await self._review("Default", request, context, validate=False)

    async def Validate(self, request: Request, context: grpc.aio.ServicerContext
                       ) -> webhook_pb2.AdmissionResponse:
        return await self._review("Validate", request, context)

    async def _review(self, method: str, request: Request, context: grpc.aio.ServicerContext,
                      validate: bool = True) -> webhook_pb2.AdmissionResponse:
        """A dry run is authorized as the write it previews, as Kubernetes' dry-run is."""
        user = await self.gate.caller(context)
        doc = document(request)
        if isinstance(doc, Review):
            return _response(doc)
        try:
            return _response(await self.admission.review(doc, validate=validate,
                                                         authorize=self._authorize(method, user)))
        except Forbidden as e:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))

    async def Delete(self, request: webhook_pb2.DeleteRequest, context: grpc.aio.ServicerContext
                     ) -> webhook_pb2.DeleteResponse:
        user = await self.gate.caller(context)
        try:
            rt = deletable_type(request.api_version, request.kind)
        except registry.UnknownResourceError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        namespace = (request.namespace or "default") if rt.namespaced else ""
        asked = request_for(DELETE, rt, namespace, request.name)
        await self.gate.check("Delete", user, asked, context)
        try:
            result, deleted = await self.admission.delete(request.api_version, request.kind, namespace,
                                                          request.name, request.resource_version)
        except NotFound as e:
            await abort(context, grpc.StatusCode.NOT_FOUND, str(e))
        except Conflict as e:
            await abort(context, grpc.StatusCode.ABORTED, str(e))
        identity = applied_by(user)
        log.info("event=delete kind=%s name=%s/%s result=%s by=%s", request.kind, namespace, request.name,
                 result, identity or "-")
        self._record(deleted, "Deleted", result, identity)
        return webhook_pb2.DeleteResponse(result=result)

    async def ReviewAccess(self, request: webhook_pb2.AccessReviewRequest, context: grpc.aio.ServicerContext
                           ) -> webhook_pb2.AccessReviewResponse:
        """Anyone may ask about themselves; asking about another user needs the impersonate verb
        on that user (and on each group named), as kubectl's --as does, or `create` on
        subjectaccessreviews (the services' system:auth-delegator)."""
        caller = await self.gate.caller(context)
        subject = caller
        if request.groups and not request.user:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "groups (--as-group) need a user (--as)")
        if request.user:
            wanted = [Access("impersonate", "", "users", name=request.user),
                      *(Access("impersonate", "", "groups", name=g) for g in request.groups)]
            # Kubernetes' SubjectAccessReview: whoever may create one may ask about anyone (the
            # services, for their own APIs' callers: flotilla.runtime.delegated_authorization).
            review = Access("create", *ACCESS_REVIEW)
            if self.authorizer.authorize(caller, review).allowed:
                wanted = [review]
            for impersonation in wanted:
                await self.gate.check("ReviewAccess", caller, impersonation, context)
            subject = User.of(request.user, request.groups)
        asked = Access(request.verb, request.api_group, request.resource, request.namespace, request.name,
                        request.subresource)
        decision = self.gate.decide("ReviewAccess", caller, asked, self.authorizer.authorize(subject, asked))
        return webhook_pb2.AccessReviewResponse(allowed=decision.allowed, reason=decision.reason)




Answer = TypeVar("Answer", webhook_pb2.AdmissionResponse, webhook_pb2.DeleteResponse,
                 webhook_pb2.AccessReviewResponse)


def counted(webhook: str, method: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Answer]]
            ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Answer]]:
    """An RPC method that counts its answers in flotilla_webhook_requests_total."""
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Answer:
        try:
            response = await method(request, context)
        except BaseException:
            WEBHOOK_REQUESTS.labels(webhook, "error").inc()
            raise
        allowed = not isinstance(response, webhook_pb2.AdmissionResponse) or response.allowed
        # A PERMISSION_DENIED abort is raised, and counted as an error above.
        WEBHOOK_REQUESTS.labels(webhook, "allowed" if allowed else "denied").inc()
        return response
    return handler


def add_to_server(servicer: WebhookServicer, server: grpc.aio.Server) -> None:
    """The generated registration, but an AdmissionRequest that does not parse reaches the
    servicer as Undecodable, to be answered with a violation rather than an UNKNOWN status."""
    admission = {
        name: grpc.unary_unary_rpc_method_handler(
            counted(name.lower(), getattr(servicer, name)),
            request_deserializer=parse_request,
            response_serializer=webhook_pb2.AdmissionResponse.SerializeToString,
        )
        for name in ("Apply", "Default", "Validate")
    }
    delete = grpc.unary_unary_rpc_method_handler(
        counted("delete", servicer.Delete),
        request_deserializer=webhook_pb2.DeleteRequest.FromString,
        response_serializer=webhook_pb2.DeleteResponse.SerializeToString,
    )
    review_access = grpc.unary_unary_rpc_method_handler(
        counted("reviewaccess", servicer.ReviewAccess),
        request_deserializer=webhook_pb2.AccessReviewRequest.FromString,
        response_serializer=webhook_pb2.AccessReviewResponse.SerializeToString,
    )
    handlers = {**admission, "Delete": delete, "ReviewAccess": review_access}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)

