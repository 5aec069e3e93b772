"""The one failure a health rule reports: it could not decide; and the two limits that make a script fail."""

from __future__ import annotations


class InterpretationError(Exception):
    """A rule could not interpret an object; the work-status controller records Unknown and an Event."""


class ScriptTimeout(InterpretationError):
    """A script ran past its time limit (the sandbox's hook stopped it)."""


class ScriptMemoryExceeded(InterpretationError):
    """A script allocated past the Lua memory limit (or the process ran out of memory under it)."""
