"""The one error a call to a member cluster raises, whatever went wrong: callers tell an answer
(`status`) from none, and never take a failed read for an absent object."""

from __future__ import annotations

__all__ = ["MemberError", "MemberLimitExceeded"]


class MemberError(Exception):
    """A call to a member cluster failed: unreachable, timed out, or answered with an error.

    `status` is the HTTP status when the server answered (None when it did not), `reason` the
    Kubernetes Status reason ("NotFound", "Unauthorized", ...) when it gave one.
    """

    def __init__(self, server: str, operation: str, detail: str, status: int | None = None,
                 reason: str = "") -> None:
        super().__init__(f"{server}: {operation}: {detail}")
        self.server = server
        self.operation = operation
        self.status = status
        self.reason = reason


class MemberLimitExceeded(MemberError):
    """The member's answer went past one of `flotilla.member.limits.Limits` (`limit`, in the
    unit the detail names): read no further, since whatever is on the member's address (a broken
    or hostile server) could otherwise make this process hold an endless body. No `status`: what
    was read is no answer, and a caller must treat it as it treats an unreachable member, never
    as an empty or absent one."""

    def __init__(self, server: str, operation: str, detail: str, limit: int) -> None:
        super().__init__(server, operation, detail)
        self.limit = limit
