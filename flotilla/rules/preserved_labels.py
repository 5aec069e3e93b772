"""Preserved labels (docs/karmada-rules.md §12.3) checked before a manifest carries them.

Why: a preserved label's value is what a statePreservation rule's JSONPath printed from the
status a member reported (flotilla/rules/jsonpath_template.py). Kubernetes refuses an object
whose label value is not a label value (at most 63 characters: alphanumerics, with `-`, `_` and
`.` inside), so a manifest carrying one would fail every apply of the replacement, and the
workload would run nowhere. Karmada injects the value unchecked; its apply then fails until the
eviction task ages out and the label goes with it. Here the executor leaves such a label out
of the new Works and applies them at once, and says so on the binding: condition
`StatePreservationFailed` (flotilla.api.wellknown), whose message names the rule, the label and
the value, cut short. That is what the rule would have done had its JSONPath found nothing
(Flotilla extracts no label then; Karmada's extraction errors and retries, which for a value a
dead cluster will never report again would hold the failover for ever). A label key that is not
one (a task a user edited: admission checks aliasLabelName) is left out the same way.

Pure functions: the executor's binding controller calls them (services/executor/works.py), and
sets the condition with `set_failed_condition` in the status write it makes anyway.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from datetime import datetime

from flotilla.api.conditions import TRUE, get_condition, remove_condition, set_condition
from flotilla.api.limits import truncate_message
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import STATE_PRESERVATION_FAILED_CONDITION
from flotilla.rules.eviction_tasks import PRODUCER as TAINT_MANAGER_PRODUCER

LABEL_VALUE_MAX = 63
LABEL_NAME_MAX = 63
LABEL_PREFIX_MAX = 253
INVALID_LABEL_VALUE = "InvalidLabelValue"
INVALID_LABEL_KEY = "InvalidLabelKey"
# How much of a refused value the condition shows: enough to recognise it, and a value of
# megabytes (extraction keeps at most 256 characters anyway) cannot swell the binding.
SHOWN_VALUE_CHARS = 64

_ALNUM = frozenset(string.ascii_letters + string.digits)
_LOWER_ALNUM = frozenset(string.ascii_lowercase + string.digits)
_NAME_CHARS = _ALNUM | frozenset("-_.")


def label_value_problems(value: str) -> list[str]:
    """Kubernetes' IsValidLabelValue: empty, or at most 63 characters, alphanumeric at both
    ends, `-`, `_` and `.` inside. Character by character, no regular expression: the value
    comes from a member."""
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if value and not _qualified(value):
        problems.append("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                        "or '.', and must start and end with an alphanumeric character")
    return problems


def label_key_problems(key: str) -> list[str]:
    """Kubernetes' IsQualifiedName: `[prefix/]name`, the prefix a DNS subdomain."""
    prefix, slash, name = key.rpartition("/")
    if "/" in prefix:
        return ["a qualified name must be a name with an optional DNS subdomain prefix and '/', like example.com/name"]
    problems = []
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > LABEL_PREFIX_MAX or not _subdomain(prefix):
            problems.append(f"prefix part must be a lowercase RFC 1123 subdomain of at most {LABEL_PREFIX_MAX} "
                            "characters")
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > LABEL_NAME_MAX or not _qualified(name):
        problems.append(f"name part must be at most {LABEL_NAME_MAX} characters: alphanumeric characters, '-', "
                        "'_' or '.', starting and ending with an alphanumeric character")
    return problems


def _qualified(text: str) -> bool:
    return text[0] in _ALNUM and text[-1] in _ALNUM and all(c in _NAME_CHARS for c in text)


def _subdomain(text: str) -> bool:
    return all(part and part[0] in _LOWER_ALNUM and part[-1] in _LOWER_ALNUM
               and all(c in _LOWER_ALNUM or c == "-" for c in part) for part in text.split("."))


@dataclass(frozen=True)
class Refused:
    """A preserved label left out of the manifest, and why."""

    label: str
    value: str
    problems: tuple[str, ...]
    key_invalid: bool = False


def split_labels(labels: Mapping[str, str]) -> tuple[dict[str, str], tuple[Refused, ...]]:
    """The labels a manifest can carry, and those it cannot (in key order)."""
    valid: dict[str, str] = {}
    refused: list[Refused] = []
    for label in sorted(labels):
        value = labels[label]
        key_problems = label_key_problems(label)
        if key_problems:
            refused.append(Refused(label, value, tuple(f"not a valid label key: {p}" for p in key_problems), True))
            continue
        value_problems = label_value_problems(value)
        if value_problems:
            refused.append(Refused(label, value, tuple(f"not a valid label value: {p}" for p in value_problems)))
        else:
            valid[label] = value
    return valid, tuple(refused)


def rule_of(spec: work_pb2.ResourceBindingSpec, producer: str, label: str) -> str:
    """The field path and JSONPath of the rule that names `label`, looked up first in the
    failover the task's producer stands for (the taint manager's is cluster failover); ""
    when no rule names it (the policy changed since, or a user wrote the task)."""
    failover = spec.failover
    sources = [("cluster", failover.cluster.state_preservation.rules),
               ("application", failover.application.state_preservation.rules)]
    if producer != TAINT_MANAGER_PRODUCER:
        sources.reverse()
    for kind, rules in sources:
        for i, rule in enumerate(rules):
            if rule.alias_label_name == label:
                return f"spec.failover.{kind}.statePreservation.rules[{i}] (jsonPath {json.dumps(rule.json_path)})"
    return ""


def shown(value: str) -> str:
    """The value quoted on one line, cut at SHOWN_VALUE_CHARS."""
    if len(value) <= SHOWN_VALUE_CHARS:
        return json.dumps(value)
    return f"{json.dumps(value[:SHOWN_VALUE_CHARS])}… ({len(value)} characters)"


def failure(spec: work_pb2.ResourceBindingSpec, task: work_pb2.GracefulEvictionTask,
            refused: Sequence[Refused]) -> tuple[str, str] | None:
    """The condition's (reason, message) for labels of `task` left out; None when none were."""
    if not refused:
        return None
    reason = INVALID_LABEL_KEY if any(r.key_invalid for r in refused) else INVALID_LABEL_VALUE
    parts = []
    for r in refused:
        rule = rule_of(spec, task.producer, r.label)
        source = f" (rule {rule})" if rule else ""
        parts.append(f"label {json.dumps(r.label)}{source}: value {shown(r.value)} is {'; '.join(r.problems)}")
    message = (f"the state preserved from cluster {task.from_cluster} is applied without "
               f"{len(refused)} label(s): {'; '.join(parts)}")
    return reason, truncate_message(message)


def set_failed_condition(conditions: MutableSequence[meta_pb2.Condition], report: tuple[str, str] | None,
                         now: datetime, generation: int) -> bool:
    """The StatePreservationFailed condition True with `report`'s reason and message, or gone
    when there is nothing to report; returns whether the conditions changed."""
    if report is None:
        return remove_condition(conditions, STATE_PRESERVATION_FAILED_CONDITION)
    reason, message = report
    return set_condition(conditions, STATE_PRESERVATION_FAILED_CONDITION, TRUE, reason, message, now, generation)


def reported(conditions: Sequence[meta_pb2.Condition], report: tuple[str, str] | None, generation: int) -> bool:
    """Whether the conditions already say what `report` says: no write is needed."""
    current = get_condition(conditions, STATE_PRESERVATION_FAILED_CONDITION)
    if report is None:
        return current is None
    return current is not None and (current.status, current.reason, current.message,
                                    current.observed_generation) == (TRUE, *report, generation)
