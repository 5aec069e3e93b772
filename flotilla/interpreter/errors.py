"""The one failure a health rule reports: it could not decide."""

from __future__ import annotations


class InterpretationError(Exception):
    """A rule could not interpret an object; the work-status controller records Unknown and an Event."""
