"""gRPC face of admission: JSON in, JSON and field violations out.

A request that is too large, not UTF-8, not JSON or too deeply nested is answered like
any rejected object, with one violation, before admission sees it.

Writes (Apply, each object of ApplyBatch, Delete) are attributed: with TLS on, the caller's
client certificate's common name is recorded on the object (annotation flotilla.io/applied-by)
and in an Event, and a caller without one is refused.

ApplyBatch admits many objects in one request (`flotillactl apply`, the rollout benchmark), each
through the path Apply takes. Per object it costs the webhook about a fifth of the CPU of an
Apply of its own (rollout benchmark, 2 cores: 0.4-0.7 ms against 2.0-2.4 ms): a unary call's own
gRPC handling dominated, and objects admitted concurrently let the store's group commit put
many reads and writes in one etcd transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message
from opentelemetry import trace

from flotilla.api import codec, registry
from flotilla.api.limits import MAX_BATCH_OBJECTS, MAX_DOCUMENT_BYTES
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
# How many objects of one ApplyBatch are admitted at once (each waits on etcd for its read and its
# compare-and-swap, so a few dozen keep the process busy without holding a whole batch in flight).
BATCH_CONCURRENCY = 32
# Kinds other objects may need in place before them: a batch admits each alone, in file order.
ORDERING_KINDS = frozenset({"Namespace", "CustomResourceDefinition", "Role", "ClusterRole", "RoleBinding",
                            "ClusterRoleBinding"})


def _response(review: Review, result: str = "", with_object: bool = True) -> webhook_pb2.AdmissionResponse:
    response = webhook_pb2.AdmissionResponse(allowed=review.allowed, result=result)
    if with_object and review.obj is not None:
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
    return _json_value(request.object_json, len(request.object_json.encode()))


def batch_document(raw: bytes) -> Any | Review:
    """One object of an ApplyBatch (bytes, not yet known to be UTF-8), as `document` reads a request."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        return _json_value("", len(raw))
    try:
        text = codec.utf8_text(raw)
    except codec.CodecError as e:
        return Review(None, errors=e.errors)
    return _json_value(text, len(raw))


def _json_value(text: str, size: int) -> Any | Review:
    if size > MAX_DOCUMENT_BYTES:
        return Review(None, errors=[codec.FieldError(
            "", f"the document is larger than {MAX_DOCUMENT_BYTES} bytes ({size} bytes)")])
    try:
        return codec.load_json(text)
    except codec.CodecError as e:
        return Review(None, errors=e.errors)


def waves(docs: Sequence[Any]) -> list[list[int]]:
    """The indices of a batch's documents in the groups ApplyBatch admits one after another; the
    documents of a group are admitted concurrently. File order is kept wherever it can matter:
    a kind others may need in place first (ORDERING_KINDS: a Namespace, a CRD, RBAC) is a group
    of its own, after everything before it and before everything after it, as is any document
    naming an object (kind and name) that the current group already holds, so that the later
    document wins, as it does when kubectl applies a file one object after another."""
    groups: list[list[int]] = []
    current: list[int] = []
    names: set[tuple[str, str]] = set()
    for i, doc in enumerate(docs):
        key = _kind_and_name(doc)
        kind = key[0] if key else ""
        if kind in ORDERING_KINDS or key in names:
            if current:
                groups.append(current)
            current, names = [], set()
            if kind in ORDERING_KINDS:
                groups.append([i])
                continue
        current.append(i)
        if key:
            names.add(key)
    if current:
        groups.append(current)
    return groups


def _kind_and_name(doc: Any) -> tuple[str, str] | None:
    """A document's kind and name as written (namespace and apiVersion left out: a coarser key
    orders more, never less); None for one that names no object (admission refuses it)."""
    if not isinstance(doc, dict):
        return None
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return str(doc.get("kind") or ""), str(name or "")


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
        doc = document(request)
        if isinstance(doc, Review):
            return _response(doc)
        try:
            return await self._apply(doc, user, "Apply")
        except Forbidden as e:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))
        except Conflict as e:
            await abort(context, grpc.StatusCode.ABORTED, str(e))

    async def _apply(self, doc: Any, user: User, method: str, with_object: bool = True
                     ) -> webhook_pb2.AdmissionResponse:
        """One object's write, for Apply and for each object of ApplyBatch: authorized (`method`
        is what the audit log records), defaulted, validated, written with compare-and-swap and
        attributed. Raises Forbidden or Conflict."""
        identity = applied_by(user)
        with tracer.start_as_current_span("webhook.apply") as span:
            outcome: Outcome = await self.admission.apply(doc, applied_by=identity,
                                                          authorize=self._authorize(method, user))
            review = outcome.review
            if review.obj is not None:
                span.set_attribute("flotilla.object", f"{_kind(review.obj)}/{meta_of(review.obj).name}")
                # Only a review with an object can be allowed.
                if review.allowed:
                    log.info("event=apply kind=%s key=%s result=%s by=%s", _kind(review.obj),
                             object_key_of(review.obj), outcome.result, identity or "-")
                    if outcome.result != UNCHANGED:
                        self._record(review.obj, "Applied", outcome.result, identity)
            return _response(review, outcome.result, with_object)

    async def ApplyBatch(self, request: webhook_pb2.AdmissionBatchRequest, context: grpc.aio.ServicerContext
                         ) -> webhook_pb2.AdmissionBatchResponse:
        """Each object as Apply (Validate, with dry_run) admits it, answered on its own: a refusal
        that would end an Apply with a gRPC status (PERMISSION_DENIED, ABORTED) is that object's
        result, and so is an unexpected failure (INTERNAL, its traceback only in the log).

        Order: the documents are admitted in the groups `waves` makes, one group after another,
        the objects of a group concurrently (at most BATCH_CONCURRENCY at once), so a Namespace,
        a CRD or an RBAC object is in place before anything after it in the request is admitted,
        and a later document for the same object wins."""
        count = len(request.objects_json)
        if count > MAX_BATCH_OBJECTS:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                        f"a batch holds at most {MAX_BATCH_OBJECTS} objects ({count} sent); split it")
        user = await self.gate.caller(context)
        docs = [batch_document(raw) for raw in request.objects_json]
        results: list[webhook_pb2.AdmissionBatchResult] = [webhook_pb2.AdmissionBatchResult()] * count
        semaphore = asyncio.Semaphore(BATCH_CONCURRENCY)

        async def admit(i: int) -> None:
            async with semaphore:
                results[i] = await self._batch_one(docs[i], user, request.dry_run)

        for wave in waves(docs):
            await asyncio.gather(*(admit(i) for i in wave))
        return webhook_pb2.AdmissionBatchResponse(results=results)

    async def _batch_one(self, doc: Any, user: User, dry_run: bool) -> webhook_pb2.AdmissionBatchResult:
        webhook = "validate" if dry_run else "apply"
        Result = webhook_pb2.AdmissionBatchResult
        try:
            if isinstance(doc, Review):
                response = _response(doc)
            elif dry_run:
                response = _response(await self.admission.review(doc, authorize=self._authorize("ApplyBatch", user)),
                                     with_object=False)
            else:
                response = await self._apply(doc, user, "ApplyBatch", with_object=False)
        except Forbidden as e:
            WEBHOOK_REQUESTS.labels(webhook, "error").inc()
            return Result(error_code=grpc.StatusCode.PERMISSION_DENIED.name, error=str(e))
        except Conflict as e:
            WEBHOOK_REQUESTS.labels(webhook, "error").inc()
            return Result(error_code=grpc.StatusCode.ABORTED.name, error=str(e))
        except Exception as e:
            log.exception("event=apply_batch_failed")
            WEBHOOK_REQUESTS.labels(webhook, "error").inc()
            return Result(error_code=grpc.StatusCode.INTERNAL.name,
                          error=f"admission failed ({type(e).__name__}); the webhook's log has the details")
        WEBHOOK_REQUESTS.labels(webhook, "allowed" if response.allowed else "denied").inc()
        return Result(response=response)

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


def _counted_errors(webhook: str, method: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
                    ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    """A batch's objects are counted one by one (as apply or validate); the batch only when it
    ends with a gRPC error status as a whole."""
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await method(request, context)
        except BaseException:
            WEBHOOK_REQUESTS.labels(webhook, "error").inc()
            raise
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
    batch = grpc.unary_unary_rpc_method_handler(
        _counted_errors("applybatch", servicer.ApplyBatch),
        request_deserializer=webhook_pb2.AdmissionBatchRequest.FromString,
        response_serializer=webhook_pb2.AdmissionBatchResponse.SerializeToString,
    )
    handlers = {**admission, "ApplyBatch": batch, "Delete": delete, "ReviewAccess": review_access}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)

