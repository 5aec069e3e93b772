"""`flotillactl trace failover CLUSTER` and `flotillactl trace rb NAME -n NS`: a failover's timeline
read from the plane's span file (`<data-dir>/traces.jsonl`, written by every service), so it
works without a collector.

Reading and grouping are pure functions of the span lines (`parse_span`, `failover_traces`,
`binding_traces`, `timeline`, `recovery`, `out_of_order`); only `cmd_*` touch files and print.
The fault time is the detect span's start, and every step's start is its first span's, all
stamped from the services' wall clock to the microsecond; a step shown before the step that
caused it is named under the table (`out of order: ...`).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from flotilla.api.errors import UserError
from flotilla.cli.table import table
from flotilla.runtime.tracecontext import BINDING, CLUSTER, RTO_SECONDS, STEP, STEPS
from flotilla.security.context import current_data_dir

TRACE_FILE = "traces.jsonl"
# The steps that name the failed cluster in `flotilla.cluster`.
_FAULT_STEPS = ("detect", "taint", "toleration-wait", "evict")


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    service: str
    start: float  # seconds since the epoch
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    error: bool = False

    @property
    def step(self) -> str:
        return str(self.attributes.get(STEP, ""))

    def clusters(self) -> list[str]:
        return [c for c in str(self.attributes.get(CLUSTER, "")).split(",") if c]


@dataclass(frozen=True)
class Row:
    step: str
    service: str
    since: float  # seconds from the fault to the first span's start
    duration: float  # from the first span's start to the last one's end
    spans: int


@dataclass(frozen=True)
class Recovery:
    """`seconds`: from the fault to the last binding's new placement Healthy (None: not yet)."""

    seconds: float | None
    bindings: int
    rto: dict[str, float]  # per binding: eviction to new placement Healthy


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def parse_span(line: str) -> Span | None:
    """One line of the span file (the SDK's `ReadableSpan.to_json()`); None for anything else."""
    try:
        raw = json.loads(line)
        service = str(raw.get("resource", {}).get("attributes", {}).get("service.name", ""))
        return Span(
            trace_id=str(raw["context"]["trace_id"]).removeprefix("0x"),
            span_id=str(raw["context"]["span_id"]).removeprefix("0x"),
            parent_id=str(raw.get("parent_id") or "").removeprefix("0x"),
            name=str(raw["name"]),
            service=service.removeprefix("flotilla-"),
            start=_seconds(raw["start_time"]),
            end=_seconds(raw["end_time"]),
            attributes=dict(raw.get("attributes") or {}),
            error=(raw.get("status") or {}).get("status_code") == "ERROR",
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def read_spans(path: Path) -> list[Span]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as e:
        raise UserError(f"no span file at {path}: no failover has been traced by this plane yet") from e
    return [s for s in map(parse_span, lines) if s is not None and s.step]


def _by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    # Oldest failover first.
    return dict(sorted(traces.items(), key=lambda item: min(s.start for s in item[1])))


def failover_traces(spans: Iterable[Span], cluster: str) -> list[list[Span]]:
    """The failovers of a cluster: traces with a detect/taint/evict step naming it, oldest first."""
    return [t for t in _by_trace(spans).values()
            if any(s.step in _FAULT_STEPS and cluster in s.clusters() for s in t)]


def binding_traces(spans: Iterable[Span], binding: str) -> list[list[Span]]:
    """The failovers a binding (`namespace/name`) went through, each cut to that binding's spans and
    the cluster-wide ones (detect, taint)."""
    result = []
    for t in _by_trace(spans).values():
        if any(s.attributes.get(BINDING) == binding for s in t):
            result.append([s for s in t if s.attributes.get(BINDING) in (None, binding)])
    return result


def fault_time(spans: Sequence[Span]) -> float:
    """When the failover began: the first failed probe (the detect span's start), else the earliest span."""
    detect = [s.start for s in spans if s.step == "detect"]
    return min(detect) if detect else min(s.start for s in spans)


# The step each step follows from, and whether it comes after that step's end (else its start): a
# taint is written once the detection is published, an eviction once its toleration wait is over,
# and the spans of one binding's move (new Works, the new replicas ready from the eviction on)
# after its eviction; failover-closed spans the whole failover from the cluster leaving Ready, the
# detection's end. Every service stamps its spans with the wall clock to the microsecond, so a
# step shown before its cause means the services' clocks disagree.
CAUSES: dict[str, tuple[str, bool]] = {
    "taint": ("detect", True),
    "toleration-wait": ("taint", False),
    "evict": ("toleration-wait", True),
    "reschedule": ("evict", False),
    "sync-works": ("evict", False),
    "apply": ("sync-works", False),
    "replicas-ready": ("evict", False),
    "task-dropped": ("replicas-ready", False),
    "failover-closed": ("detect", True),
    "purge": ("evict", False),
}


def out_of_order(spans: Sequence[Span]) -> list[str]:
    """The steps whose first span starts before the step that caused them (CAUSES) started, or
    ended where it must have ended first; empty when the timeline is in causal order."""
    if not spans:
        return []
    fault = fault_time(spans)
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for span in spans:
        starts[span.step] = min(starts.get(span.step, span.start), span.start)
        ends[span.step] = min(ends.get(span.step, span.end), span.end)
    problems = []
    for step, (cause, after_end) in CAUSES.items():
        if step not in starts or cause not in starts:
            continue
        bound = ends[cause] if after_end else starts[cause]
        if starts[step] < bound:
            problems.append(f"{step} starts at +{starts[step] - fault:.3f}s, before {cause} "
                            f"{'ended' if after_end else 'started'} (+{bound - fault:.3f}s)")
    return problems


def _order(step: str) -> int:
    return STEPS.index(step) if step in STEPS else len(STEPS)


def timeline(spans: Sequence[Span]) -> list[Row]:
    """One row per step and service, however many bindings: when it first started after the fault,
    how long from then to its last span's end, and how many spans."""
    if not spans:
        return []
    fault = fault_time(spans)
    groups: dict[tuple[str, str], list[Span]] = {}
    for span in spans:
        groups.setdefault((span.step, span.service), []).append(span)
    rows = [Row(step=step, service=service, since=min(s.start for s in group) - fault,
                duration=max(s.end for s in group) - min(s.start for s in group), spans=len(group))
            for (step, service), group in groups.items()]
    return sorted(rows, key=lambda r: (_order(r.step), r.since))


def recovery(spans: Sequence[Span]) -> Recovery:
    ready = [s for s in spans if s.step == "replicas-ready"]
    rto = {str(s.attributes.get(BINDING, "")): float(s.attributes[RTO_SECONDS])
           for s in ready if RTO_SECONDS in s.attributes}
    evicted = {str(s.attributes.get(BINDING, "")) for s in spans if s.step == "evict"}
    done = not (evicted - set(rto)) and bool(ready)
    seconds = max(s.end for s in ready) - fault_time(spans) if done else None
    return Recovery(seconds=seconds, bindings=len(evicted | set(rto)), rto=rto)


def render(spans: Sequence[Span]) -> str:
    fault = fault_time(spans)
    header = f"trace {spans[0].trace_id}, fault at {datetime.fromtimestamp(fault).astimezone().isoformat()}"
    rows = [[r.step, r.service, f"+{r.since:.3f}s", f"{r.duration:.3f}s", str(r.spans)] for r in timeline(spans)]
    lines = [header, table(["STEP", "SERVICE", "SINCE FAULT", "DURATION", "SPANS"], rows)]
    lines.extend(f"out of order: {problem}" for problem in out_of_order(spans))
    rec = recovery(spans)
    if rec.seconds is None:
        lines.append(f"recovery: not yet ({len(rec.rto)}/{rec.bindings} bindings have their new replicas ready)")
    else:
        lines.append(f"recovery: {rec.seconds:.3f}s after the fault ({rec.bindings} binding(s))")
    if rec.rto:
        values = list(rec.rto.values())
        lines.append(f"RTO per binding (eviction to new placement Healthy): max {max(values):.3f}s, "
                     f"median {statistics.median(values):.3f}s")
    return "\n".join(lines)


def as_json(spans: Sequence[Span]) -> dict[str, Any]:
    rec = recovery(spans)
    return {
        "trace_id": spans[0].trace_id,
        "fault": datetime.fromtimestamp(fault_time(spans)).astimezone().isoformat(),
        "steps": [{"step": r.step, "service": r.service, "since_fault_seconds": round(r.since, 6),
                   "duration_seconds": round(r.duration, 6), "spans": r.spans} for r in timeline(spans)],
        "out_of_order": out_of_order(spans),
        "recovery_seconds": None if rec.seconds is None else round(rec.seconds, 6),
        "bindings": rec.bindings,
        "rto_seconds": rec.rto,
    }


def span_file(args: argparse.Namespace) -> Path:
    if args.trace_file:
        return Path(args.trace_file)
    data_dir = Path(args.data_dir) if args.data_dir else current_data_dir()
    if data_dir is None:
        raise UserError("no span file: pass --data-dir (the plane's data dir) or --trace-file, or run `flotilla up`")
    return data_dir / TRACE_FILE


def _print(traces: list[list[Span]], what: str, args: argparse.Namespace) -> int:
    if not traces:
        raise UserError(f"no failover trace of {what} in {span_file(args)}")
    if args.last:
        traces = traces[-1:]
    if args.output == "json":
        print(json.dumps([as_json(t) for t in traces], indent=2))
    else:
        print("\n\n".join(render(t) for t in traces))
    return 0


async def cmd_failover(args: argparse.Namespace) -> int:
    return _print(failover_traces(read_spans(span_file(args)), args.cluster), f"cluster {args.cluster}", args)


async def cmd_rb(args: argparse.Namespace) -> int:
    key = f"{args.namespace}/{args.name}"
    return _print(binding_traces(read_spans(span_file(args)), key), f"ResourceBinding {key}", args)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("trace", help="a failover's timeline from the plane's span file")
    kinds = p.add_subparsers(dest="what", required=True)
    failover = kinds.add_parser("failover", help="the failovers of a cluster: each step, its service and timing")
    failover.add_argument("cluster")
    failover.set_defaults(run=cmd_failover)
    rb = kinds.add_parser("rb", help="the failovers a ResourceBinding went through")
    rb.add_argument("name")
    rb.add_argument("-n", "--namespace", default="default")
    rb.set_defaults(run=cmd_rb)
    for q in (failover, rb):
        q.add_argument("--last", action="store_true", help="only the latest failover")
        q.add_argument("-o", "--output", choices=["table", "json"], default="table")
        q.add_argument("--data-dir", default="", help="the plane's data dir (default: the current context's)")
        q.add_argument("--trace-file", default="", help="read spans from this JSON-lines file instead")


__all__ = ["CAUSES", "Recovery", "Row", "Span", "as_json", "binding_traces", "failover_traces", "out_of_order",
           "parse_span", "read_spans", "recovery", "register", "render", "timeline"]
