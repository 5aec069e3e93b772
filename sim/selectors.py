"""Label and field selectors, as `?labelSelector=` and `?fieldSelector=` take them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sim.errors import bad_request

Matcher = Callable[[Mapping[str, str]], bool]

# One requirement: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`.
_TERM = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<nkey>[^\s,=!()]+)"
    r"|(?P<key>[^\s,=!()]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,=!()]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?)\s*(?:,|$)"
)


def parse_label_selector(text: str | None) -> Matcher:
    """A predicate over a labels mapping; every requirement must hold."""
    if not text or not text.strip():
        return lambda labels: True
    requirements: list[Matcher] = []
    pos = 0
    while pos < len(text):
        match = _TERM.match(text, pos)
        if match is None or match.end() == pos:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        requirements.append(_requirement(match))
        pos = match.end()
    return lambda labels: all(r(labels) for r in requirements)


def _requirement(match: re.Match[str]) -> Matcher:
    if match["not"]:
        key = match["nkey"]
        return lambda labels: key not in labels
    key, op, value, setop = match["key"], match["op"], match["value"], match["setop"]
    if op in ("=", "=="):
        return lambda labels: labels.get(key) == value
    if op == "!=":
        return lambda labels: labels.get(key) != value
    if setop:
        values = {v.strip() for v in match["values"].split(",") if v.strip()}
        if setop == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def parse_field_selector(text: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """Equality on dotted paths (`metadata.name=x`, `spec.nodeName=`, `status.phase!=Running`)."""
    if not text or not text.strip():
        return lambda obj: True
    matcher = parse_label_selector(text)
    paths = [re.split(r"!=|==|=", term, maxsplit=1)[0].strip() for term in text.split(",")]

    def fields(obj: Mapping[str, Any]) -> dict[str, str]:
        found = {}
        for path in paths:
            value: Any = obj
            for part in path.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            found[path] = "" if value is None else str(value)
        return found

    return lambda obj: matcher(fields(obj))


def label_selector_matcher(selector: Mapping[str, Any] | None) -> Matcher:
    """A predicate for a metav1.LabelSelector (matchLabels + matchExpressions). An empty or
    missing selector matches everything, as in a PodDisruptionBudget."""
    return parse_label_selector(selector_string(selector))


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """The selector in query syntax (what a Scale's status.selector shows)."""
    if not selector:
        return ""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)
