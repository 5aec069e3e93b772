"""Kubernetes API errors as the API server reports them: a `Status` object with reason and code."""

from __future__ import annotations

from typing import Any

from sim.catalog import ResourceType


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(t: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": t.plural}
    if t.group:
        details["group"] = t.group
    return details


def not_found(t: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{t.qualified} "{name}" not found', _details(t, name))


def already_exists(t: ResourceType, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{t.qualified} "{name}" already exists', _details(t, name))


def conflict(t: ResourceType, name: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {t.qualified} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again", _details(t, name))


def precondition_failed(t: ResourceType, name: str, field: str, wanted: str, found: str) -> ApiError:
    """A DeleteOptions precondition (uid, resourceVersion) the object does not meet."""
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {t.qualified} "{name}": Precondition failed: '
                    f"{field} in precondition: {wanted}, {field} in object meta: {found}", _details(t, name))


def invalid(t: ResourceType, name: str, message: str) -> ApiError:
    return ApiError(422, "Invalid", f'{t.kind} "{name}" is invalid: {message}', _details(t, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed(method: str, what: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource "
                    f"({method} {what})", {})


UNAUTHORIZED = ApiError(401, "Unauthorized", "Unauthorized")
