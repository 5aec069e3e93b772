"""`flotillactl describe KIND NAME`: one object, its conditions and its events, as kubectl describes them.

The layout is kubectl's generic describer (the one it uses for custom
resources): the header lines, then every other field in Title Case, sorted,
aligned the way Go's tabwriter aligns them.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.api import codec, registry
from flotilla.api.errors import UserError
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import core_pb2, work_pb2
from flotilla.cli.age import since, since_text
from flotilla.cli.connection import open_store
from flotilla.cli.get import add_namespace_flag, namespace_for, resolve_kind, split_kind_name
from flotilla.cli.printers import REDACTED, event_source, hide_secret_values, hide_work_secret_values, with_type_fields
from flotilla.cli.reads import try_get_object
from flotilla.store.events import events_for

M = TypeVar("M", bound=Message)

INDENT = "  "
MAX_ANNOTATION = 140
# Shown by `kubectl apply` bookkeeping, never useful to read.
SKIPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
# Metadata the header lines already show.
HEADER_METADATA = ("name", "namespace", "labels", "annotations", "managedFields")
# Maps whose keys are data (label keys, resource names, config keys), not field names:
# they print as written instead of in Title Case.
DATA_MAPS = frozenset(
    {
        "labels", "annotations", "matchLabels", "nodeSelector", "data", "binaryData", "stringData",
        "allocatable", "allocating", "allocated", "resourceRequest", "limits", "requests", "capacity",
        "proxyHeader", "preservedLabelState",
    }
)
_ACRONYMS = frozenset({"API", "URL", "UID", "OSB", "GUID"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|-")


def smart_label(field: str) -> str:
    """`apiEndpoint` -> `API Endpoint`, `kubernetesVersion` -> `Kubernetes Version` (kubectl's smartLabelFor).

    Keys holding anything but letters and dashes (`app.kubernetes.io/name`, `k8s`) stay as written.
    """
    if not field or re.search(r"[^A-Za-z-]", field):
        return field
    words = []
    for part in _WORDS.findall(field):
        words.append(part.upper() if part.upper() in _ACRONYMS else part[:1].upper() + part[1:])
    return " ".join(words)


# -- Go's text/tabwriter, as kubectl configures it for describe -----------------------


def tabwrite(lines: Sequence[str], padding: int = 2) -> str:
    """Align tab-separated cells: a column's width holds over each run of lines that have that column.

    A line's last cell never sets a width, so `Key:\\tvalue` lines align their
    values while a line without a tab ends the run, exactly as Go's tabwriter does.
    """
    rows = [line.split("\t") for line in lines]
    widths_of: list[list[int]] = [[] for _ in rows]

    def layout(first: int, end: int, widths: list[int]) -> None:
        column = len(widths)
        i = first
        while i < end:
            if column >= len(rows[i]) - 1:
                widths_of[i] = widths
                i += 1
                continue
            start, width = i, 0
            while i < end and column < len(rows[i]) - 1:
                width = max(width, len(rows[i][column]) + padding)
                i += 1
            layout(start, i, [*widths, width])

    layout(0, len(rows), [])
    out = []
    for cells, widths in zip(rows, widths_of, strict=True):
        text = "".join(c.ljust(widths[j]) if j < len(widths) else c for j, c in enumerate(cells))
        out.append(text.rstrip())
    return "\n".join(out)


# -- the object's fields ------------------------------------------------------------


def _scalar(value: Any) -> str:
    # As Go's %v prints decoded JSON.
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value).replace("\t", " ")


def field_lines(data: dict[str, Any], level: int, verbatim_keys: bool = False) -> list[str]:
    """Nested fields as kubectl's printUnstructuredContent writes them: sorted, one level = two spaces."""
    lines: list[str] = []
    pad = INDENT * level
    for key in sorted(data):
        value = data[key]
        label = key if verbatim_keys else smart_label(key)
        if isinstance(value, dict):
            lines.append(f"{pad}{label}:")
            lines += field_lines(value, level + 1, verbatim_keys=key in DATA_MAPS)
        elif isinstance(value, list):
            lines.append(f"{pad}{label}:")
            for item in value:
                if isinstance(item, dict):
                    lines += field_lines(item, level + 1)
                else:
                    lines.append(f"{pad}{INDENT}{_scalar(item)}")
        elif isinstance(value, str) and "\n" in value.rstrip("\n"):
            # Scripts (Lua customizations) read as blocks, not as one tabbed line.
            lines.append(f"{pad}{label}:")
            lines += [f"{pad}{INDENT}{line}".rstrip() for line in value.rstrip("\n").split("\n")]
        else:
            lines.append(f"{pad}{label}:\t{_scalar(value)}")
    return lines


def _multiline(title: str, entries: Sequence[str]) -> list[str]:
    if not entries:
        return [f"{title}:\t<none>"]
    return [f"{title}:\t{entries[0]}", *(f"\t{e}" for e in entries[1:])]


def _annotation_entries(annotations: dict[str, str]) -> list[str]:
    entries = []
    for key in sorted(k for k in annotations if k not in SKIPPED_ANNOTATIONS):
        value = annotations[key].removesuffix("\n")
        if len(key) + len(value) + 2 > MAX_ANNOTATION or "\n" in value:
            entries.append(f"{key}:")
            entries += [f"  {_shorten(line, MAX_ANNOTATION - 2)}" for line in value.split("\n")]
        else:
            entries.append(f"{key}: {value}")
    return entries


def _shorten(text: str, limit: int) -> str:
    return text[:limit] + "..." if len(text) > limit else text


# -- conditions and events -------------------------------------------------------------


def condition_lines(items: Sequence[Any], now: datetime) -> list[str]:
    """The conditions table; `items` are conditions in their JSON shape."""
    lines = [
        "Conditions:",
        f"{INDENT}Type\tStatus\tReason\tLastTransitionTime\tAge\tMessage",
        f"{INDENT}----\t------\t------\t------------------\t---\t-------",
    ]
    for c in items:
        if not isinstance(c, dict):
            continue
        transition = c.get("lastTransitionTime", "")
        cells = [c.get("type", ""), c.get("status", ""), c.get("reason", ""), transition,
                 since_text(transition, now), " ".join(str(c.get("message", "")).split())]
        lines.append(INDENT + "\t".join(_scalar(x) for x in cells))
    return lines


def _event_age(event: core_pb2.Event, now: datetime) -> str:
    first = since(event.first_timestamp, now)
    if event.count > 1:
        return f"{since(event.last_timestamp, now)} (x{event.count} over {first})"
    return first


def event_lines(events: Sequence[core_pb2.Event], now: datetime) -> list[str]:
    if not events:
        return ["Events:\t<none>"]
    lines = [
        "Events:",
        f"{INDENT}Type\tReason\tAge\tFrom\tMessage",
        f"{INDENT}----\t------\t----\t----\t-------",
    ]
    for e in events:
        message = " ".join(e.message.split())
        lines.append(f"{INDENT}{e.type}\t{e.reason}\t{_event_age(e, now)}\t{event_source(e)}\t{message}")
    return lines


# -- a binding's failover history --------------------------------------------------------

def _timestamp_text(ts: Timestamp) -> str:
    return ts.ToDatetime(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failover_history_lines(records: Sequence[work_pb2.FailoverRecord]) -> list[str]:
    """status.failoverHistory as a table (Karmada #5251): RECOVERY is eviction → every new
    placement Healthy, `-` while still recovering."""
    lines = [
        "Failover history:",
        f"{INDENT}TIME\tFROM\tTO\tREASON\tPRODUCER\tRECOVERY",
        f"{INDENT}----\t----\t--\t------\t--------\t--------",
    ]
    for r in records:
        time = _timestamp_text(r.time) if r.HasField("time") else "-"
        recovery = "-"
        if r.HasField("time") and r.HasField("recovered_time"):
            seconds = (r.recovered_time.ToNanoseconds() - r.time.ToNanoseconds()) / 1e9
            recovery = f"{seconds:.1f}s"
        if r.HasField("failed_back_time"):
            recovery += f" (failed back {_timestamp_text(r.failed_back_time)})"
        cells = [time, r.from_cluster or "-", ",".join(r.to_clusters) or "-", r.reason or "-", r.producer or "-",
                 recovery]
        lines.append(INDENT + "\t".join(cells))
    return lines


# -- the whole text ------------------------------------------------------------------


def describe(rt: ResourceType[M], obj: M, events: Sequence[core_pb2.Event], now: datetime) -> str:
    """What `describe` prints for one object and its events (oldest first)."""
    body = codec.to_dict(with_type_fields(rt, obj))
    meta = body.pop("metadata", {})
    lines = [f"Name:\t{meta.get('name', '')}"]
    if rt.namespaced:
        lines.append(f"Namespace:\t{meta.get('namespace', '')}")
    lines += _multiline("Labels", [f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items())])
    lines += _multiline("Annotations", _annotation_entries(meta.get("annotations") or {}))
    rest = {k: v for k, v in meta.items() if k not in HEADER_METADATA}
    if rest:
        body["metadata"] = rest
    if rt.is_template and rt.group == "" and rt.kind == "Secret":
        hide_secret_values(body, "{size} bytes")
    if rt.kind == "Work" and rt.api_version == registry.WORK_API:
        hide_work_secret_values(body, REDACTED)
    status = body.get("status")
    conditions = status.pop("conditions", None) if isinstance(status, dict) else None
    history: Sequence[work_pb2.FailoverRecord] = ()
    if isinstance(obj, work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding):
        history = obj.status.failover_history
    if history and isinstance(status, dict):
        status.pop("failoverHistory", None)
    if status == {}:
        # Only conditions: they get their own table below.
        del body["status"]
    lines += field_lines(body, 0)
    if conditions:
        lines += condition_lines(conditions, now)
    if history:
        lines += failover_history_lines(history)
    lines += event_lines(events, now)
    return tabwrite(lines)


async def cmd_describe(args: argparse.Namespace) -> int:
    kind, name = split_kind_name(args.kind, args.name)
    if not name:
        raise UserError(f"describe {kind}: a NAME is required")
    async with open_store(args) as store:
        rt = await resolve_kind(store, kind)
        obj = await try_get_object(store, rt, namespace_for(rt, args.namespace) or "", name)
        if obj is None:
            raise UserError(f'{rt.plural} "{name}" not found')
        events = await events_for(store, obj)
    print(describe(rt, obj, events, datetime.now(UTC)))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("describe", help="an object, its conditions and its events")
    p.add_argument("kind", metavar="KIND", help="clusters, pp, rb, works, deployments, … (or KIND/NAME)")
    p.add_argument("name", metavar="NAME", nargs="?", default=None)
    add_namespace_flag(p)
    p.set_defaults(run=cmd_describe)
