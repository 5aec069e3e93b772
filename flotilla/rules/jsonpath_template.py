"""Kubernetes JSONPath templates (`{ .jobStatus.jobID }`), as state-preservation rules use them:
validated by admission, evaluated by the taint manager and application failover."""

from __future__ import annotations

import json
from typing import Any

from jsonpath_ng.ext.parser import parse as parse_jsonpath

_QUOTES = "'\""


def jsonpath_template_problem(template: str) -> str | None:
    """Why the template cannot be used to extract a value, or None when it can.

    Karmada runs the template through Kubernetes' JSONPath printer, where text
    outside braces is printed literally; a preserved label is one value, so a
    template must be exactly one `{...}` expression. The expression inside is
    parsed with jsonpath-ng (with filters), whose grammar is a close superset
    of Kubernetes' for the paths that make sense here.
    """
    text = template.strip()
    problem = _brace_problem(text)
    if problem:
        return problem
    if not (text.startswith("{") and text.endswith("}")):
        return "must be a single JSONPath expression in braces, like {.status.jobID}"
    expression = text[1:-1].strip()
    if not expression:
        return "empty JSONPath expression"
    if expression[0] in ".[":
        # Kubernetes expressions start at the current object; jsonpath-ng wants an explicit root.
        expression = "$" + expression
    elif expression[0] != "$":
        return "the expression must start with '.', '[' or '$', like {.status.jobID}"
    try:
        parse_jsonpath(expression)
    except Exception as e:  # jsonpath-ng raises its own errors, and ply's, for different malformations
        return f"invalid JSONPath expression: {e}"
    return None


def extract(template: str, obj: Any) -> str | None:
    """The value a valid template selects from `obj`, as Kubernetes' printer shows it
    (strings bare, other values as JSON); None when nothing matches."""
    expression = template.strip()[1:-1].strip()
    if expression[0] in ".[":
        expression = "$" + expression
    matches = parse_jsonpath(expression).find(obj)
    if not matches:
        return None
    values = [m.value for m in matches]
    return " ".join(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in values)


def _brace_problem(text: str) -> str | None:
    depth = 0
    actions = 0
    quote = ""
    for c in text:
        if quote:
            if c == quote:
                quote = ""
        elif c in _QUOTES and depth:
            quote = c
        elif c == "{":
            depth += 1
            actions += 1
            if depth > 1:
                return "unbalanced braces: '{' inside an expression"
        elif c == "}":
            depth -= 1
            if depth < 0:
                return "unbalanced braces: '}' without '{'"
    if quote:
        return "unterminated quote"
    if depth:
        return "unbalanced braces: '{' without '}'"
    if actions > 1:
        return "must be a single JSONPath expression in braces, like {.status.jobID}"
    return None
