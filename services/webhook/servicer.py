"""gRPC face of admission: JSON in, JSON and field violations out."""

from __future__ import annotations

import json
import logging

import grpc
from google.protobuf.message import Message
from opentelemetry import trace

from flotilla.api import codec, registry
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.store import Conflict, NotFound
from flotilla.store.base import meta_of, object_key_of
from services.rpc import abort
from services.webhook.admission import Admission, Outcome, Review

log = logging.getLogger(__name__)
tracer = trace.get_tracer("flotilla.webhook")


def _response(review: Review, result: str = "") -> webhook_pb2.AdmissionResponse:
    response = webhook_pb2.AdmissionResponse(allowed=review.allowed, result=result)
    if review.obj is not None:
        response.object_json = codec.to_json(review.obj)
    response.violations.extend(webhook_pb2.FieldViolation(path=e.path, reason=e.reason) for e in review.errors)
    return response


def _document(request: webhook_pb2.AdmissionRequest) -> object:
    try:
        return json.loads(request.object_json)
    except json.JSONDecodeError as e:
        return e


def _kind(obj: Message) -> str:
    kind: str = getattr(obj, "kind")  # noqa: B009 - every kind's message has one; Message does not
    return kind


def _not_json(e: json.JSONDecodeError) -> webhook_pb2.AdmissionResponse:
    return _response(Review(None, errors=[codec.FieldError("", f"not a JSON document: {e.msg}")]))


class WebhookServicer(webhook_pb2_grpc.WebhookServicer):
    def __init__(self, admission: Admission) -> None:
        self.admission = admission

    async def Apply(self, request: webhook_pb2.AdmissionRequest, context: grpc.aio.ServicerContext
                    ) -> webhook_pb2.AdmissionResponse:
        doc = _document(request)
        if isinstance(doc, json.JSONDecodeError):
            return _not_json(doc)
        with tracer.start_as_current_span("webhook.apply") as span:
            try:
                outcome: Outcome = await self.admission.apply(doc)
            except Conflict as e:
                await abort(context, grpc.StatusCode.ABORTED, str(e))
            review = outcome.review
            if review.obj is not None:
                span.set_attribute("flotilla.object", f"{_kind(review.obj)}/{meta_of(review.obj).name}")
                # Only a review with an object can be allowed.
                if review.allowed:
                    log.info("event=apply kind=%s key=%s result=%s", _kind(review.obj),
                             object_key_of(review.obj), outcome.result)
            return _response(review, outcome.result)

    async def Default(self, request: webhook_pb2.AdmissionRequest, context: grpc.aio.ServicerContext
                      ) -> webhook_pb2.AdmissionResponse:
        doc = _document(request)
        if isinstance(doc, json.JSONDecodeError):
            return _not_json(doc)
        return _response(await self.admission.review(doc, validate=False))

    async def Validate(self, request: webhook_pb2.AdmissionRequest, context: grpc.aio.ServicerContext
                       ) -> webhook_pb2.AdmissionResponse:
        doc = _document(request)
        if isinstance(doc, json.JSONDecodeError):
            return _not_json(doc)
        return _response(await self.admission.review(doc))

    async def Delete(self, request: webhook_pb2.DeleteRequest, context: grpc.aio.ServicerContext
                     ) -> webhook_pb2.DeleteResponse:
        try:
            result = await self.admission.delete(request.api_version, request.kind, request.namespace,
                                                 request.name, request.resource_version)
        except NotFound as e:
            await abort(context, grpc.StatusCode.NOT_FOUND, str(e))
        except Conflict as e:
            await abort(context, grpc.StatusCode.ABORTED, str(e))
        except registry.UnknownResourceError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        log.info("event=delete kind=%s name=%s/%s result=%s", request.kind, request.namespace, request.name, result)
        return webhook_pb2.DeleteResponse(result=result)


