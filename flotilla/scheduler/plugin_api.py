"""The public scheduler-plugin interface.

A plugin is an object with a `name` and a `filter` method, a `score` method,
or both:

    class NoFridayDeploys:
        name = "NoFridayDeploys"

        def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
            if cluster.labels.get("freeze") == "true":
                return Result.unschedulable("cluster(s) are frozen")
            return SUCCESS

A filter decides whether one cluster may take the binding (every filter must
pass); a score ranks the clusters that passed (0..100, summed over plugins).
Both are called many times per binding and must be pure and fast: no I/O,
no mutation of what they are given. A filter that can rule out most of a
fleet in one go may also define `prefilter` (see PreFilterPlugin).

A package ships plugins through the entry-point group
`flotilla.scheduler.plugins`, one entry point per plugin, named as the plugin,
pointing at a class or a zero-argument factory:

    [project.entry-points."flotilla.scheduler.plugins"]
    NoFridayDeploys = "mypkg.plugins:NoFridayDeploys"

`--plugins` on the scheduler chooses which run, as Karmada's flag does:
`*` is every built-in and installed plugin, `Name` adds one, `-Name` removes
one (`*,-ClusterLocality`).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from flotilla.api.clusters import cluster_ready
from flotilla.api.selectors import compile_label_selector, label_selector_matches, requirement_matches, zones_match
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2, work_pb2

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_CLUSTER_SCORE",
    "MIN_CLUSTER_SCORE",
    "SUCCESS",
    "AffinityMatcher",
    "BindingInfo",
    "ClusterInfo",
    "Code",
    "FilterPlugin",
    "PluginError",
    "PluginFactory",
    "PreFilterPlugin",
    "Result",
    "ScorePlugin",
    "discover_plugins",
    "instantiate",
    "label_selector_matches",
    "select_plugins",
]

ENTRY_POINT_GROUP = "flotilla.scheduler.plugins"
MIN_CLUSTER_SCORE = 0
MAX_CLUSTER_SCORE = 100


# -- results ---------------------------------------------------------------------------


class Code(StrEnum):
    SUCCESS = "Success"
    # The cluster cannot take the binding; the reasons say why (shown to users, counted in
    # "0/N clusters are available: ..." messages, so phrase them as "cluster(s) ...").
    UNSCHEDULABLE = "Unschedulable"
    # The plugin could not decide; the binding's scheduling fails and is retried.
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Result:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @staticmethod
    def unschedulable(*reasons: str) -> Result:
        return Result(Code.UNSCHEDULABLE, reasons)

    @staticmethod
    def error(reason: str) -> Result:
        return Result(Code.ERROR, (reason,))

    def reason(self) -> str:
        return "; ".join(self.reasons)


# Filters return this one object for "fits", so the hot path allocates nothing.
SUCCESS = Result()


# -- what plugins see ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class ClusterInfo:
    """A Cluster as plugins see it: the object itself plus the facts filters ask for,
    digested once per version of the object rather than once per binding."""

    name: str
    cluster: cluster_pb2.Cluster
    labels: Mapping[str, str]
    provider: str
    region: str
    zones: tuple[str, ...]
    taints: tuple[meta_pb2.Taint, ...]
    # (groupVersion, kind) of every API the cluster reported serving.
    api_enablements: frozenset[tuple[str, str]]
    deleting: bool
    ready: bool

    @classmethod
    def from_cluster(cls, cluster: cluster_pb2.Cluster) -> ClusterInfo:
        spec, status = cluster.spec, cluster.status
        apis = frozenset(
            (enablement.group_version, resource.kind)
            for enablement in status.api_enablements
            for resource in enablement.resources
        )
        # Admission moves the deprecated `zone` into `zones`; objects written around it still count.
        zones = tuple(spec.zones) or ((spec.zone,) if spec.zone else ())
        return cls(
            name=cluster.metadata.name,
            cluster=cluster,
            labels=dict(cluster.metadata.labels),
            provider=spec.provider,
            region=spec.region,
            zones=zones,
            taints=tuple(spec.taints),
            api_enablements=apis,
            deleting=cluster.metadata.HasField("deletion_timestamp"),
            ready=cluster_ready(cluster),
        )

    def serves(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self.api_enablements


AnyAffinity = policy_pb2.ClusterAffinity | policy_pb2.ClusterAffinityTerm | policy_pb2.OverflowClusterAffinity


class AffinityMatcher:
    """A cluster affinity compiled once and evaluated per cluster with Karmada's rules
    (`util.ClusterMatches`): `exclude` wins; labelSelector, fieldSelector and clusterNames
    must each match when set; nothing set matches every cluster.

    fieldSelector: `provider`/`region` use label-selector semantics on the cluster's fields
    (NotIn matches a cluster without the field); `zone` In needs every zone of the cluster in
    the values, NotIn none of them.
    """

    __slots__ = ("_exclude", "_fields", "_labels", "_last", "_names", "_verdicts", "_zones", "term")

    @classmethod
    def of(cls, term: AnyAffinity) -> AffinityMatcher:
        """A shared matcher for this term: bindings of one policy carry equal terms, and a
        shared matcher decides each version of each cluster once for all of them."""
        return _matcher(type(term).__name__, term.SerializeToString(deterministic=True))

    def __init__(self, term: AnyAffinity) -> None:
        self.term = term
        # cluster name -> (the ClusterInfo decided, the verdict); a new version of a cluster is
        # a new ClusterInfo, which invalidates the entry.
        self._verdicts: dict[str, tuple[ClusterInfo, bool]] = {}
        self._last: tuple[Sequence[ClusterInfo], Sequence[ClusterInfo]] | None = None
        self._exclude = frozenset(term.exclude)
        self._names = frozenset(term.cluster_names)
        self._labels = compile_label_selector(term.label_selector) if term.HasField("label_selector") else None
        self._fields: list[tuple[str, str, frozenset[str]]] = []
        self._zones: list[tuple[str, frozenset[str]]] = []
        if term.HasField("field_selector"):
            for requirement in term.field_selector.match_expressions:
                values = frozenset(requirement.values)
                if requirement.key == "zone":
                    self._zones.append((requirement.operator, values))
                else:
                    self._fields.append((requirement.key, requirement.operator, values))

    def matches(self, cluster: ClusterInfo) -> bool:
        known = self._verdicts.get(cluster.name)
        if known is not None and known[0] is cluster:
            return known[1]
        verdict = self._decide(cluster)
        self._verdicts[cluster.name] = (cluster, verdict)
        return verdict

    def select(self, clusters: Sequence[ClusterInfo]) -> Sequence[ClusterInfo]:
        """The clusters that match, in order; remembered for the last sequence asked about
        (a scheduling snapshot is one tuple shared by every binding scheduled against it)."""
        last = self._last
        if last is not None and last[0] is clusters:
            return last[1]
        matching = [c for c in clusters if self.matches(c)]
        self._last = (clusters, matching)
        return matching

    def _decide(self, cluster: ClusterInfo) -> bool:
        name = cluster.name
        if name in self._exclude:
            return False
        if self._labels is not None and not self._labels(cluster.labels):
            return False
        for operator, values in self._zones:
            if not zones_match(operator, values, cluster.zones):
                return False
        if self._fields:
            fields = {"provider": cluster.provider, "region": cluster.region}
            present = {k: v for k, v in fields.items() if v}
            for key, operator, values in self._fields:
                if not requirement_matches(key, operator, values, present):
                    return False
        return not self._names or name in self._names


_AFFINITY_KINDS: dict[str, type[AnyAffinity]] = {
    kind.__name__: kind
    for kind in (policy_pb2.ClusterAffinity, policy_pb2.ClusterAffinityTerm, policy_pb2.OverflowClusterAffinity)
}


@lru_cache(maxsize=1024)
def _matcher(kind: str, serialized: bytes) -> AffinityMatcher:
    term = _AFFINITY_KINDS[kind]()
    term.ParseFromString(serialized)
    return AffinityMatcher(term)


@dataclass(frozen=True, slots=True, eq=False)
class BindingInfo:
    """A ResourceBinding or ClusterResourceBinding as plugins see it, for one scheduling attempt.

    `spec` and `status` are the binding's own messages: read them, never change them.
    """

    kind: str
    namespace: str
    name: str
    spec: work_pb2.ResourceBindingSpec
    status: work_pb2.ResourceBindingStatus
    # The placement with the admission defaults that shape scheduling applied.
    placement: policy_pb2.Placement
    # `apiVersion` and `kind` of the resource template.
    resource: tuple[str, str]
    # Current spec.clusters: name -> replicas.
    targets: Mapping[str, int]
    # Clusters in spec.gracefulEvictionTasks.
    evicting: frozenset[str]
    # Clusters application failover evicted it from within blockPredecessorSeconds.
    blocked: frozenset[str]
    now: datetime
    # The cluster affinity in force for this attempt: `clusterAffinity`, or the
    # `clusterAffinities` term being tried; None when the placement has neither.
    affinity: AffinityMatcher | None = None
    # That term's overflowAffinities, in order (workloads only).
    overflow: tuple[AffinityMatcher, ...] = field(default=())
    # Clusters among `evicting` whose task holds the only running copy and that may have the
    # workload back once they can take it, with the replicas that copy runs
    # (flotilla.scheduler.placement.returning_clusters).
    returning: Mapping[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# -- plugin interfaces -----------------------------------------------------------------


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result: ...


class PreFilterPlugin(Protocol):
    """Optional, on a filter plugin: narrow the candidates in one call.

    Returns the clusters that may pass and the Result every other cluster gets, or None
    to have `filter` called per cluster. Prefilters run before any filter, so the
    plugin's reason is the one recorded for the clusters it rules out.
    """

    name: str

    def prefilter(self, binding: BindingInfo, clusters: Sequence[ClusterInfo]
                  ) -> tuple[Sequence[ClusterInfo], Result] | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, binding: BindingInfo, cluster: ClusterInfo) -> int:
        """MIN_CLUSTER_SCORE..MAX_CLUSTER_SCORE; a plugin with a wider scale also defines
        `normalize(binding, scores: dict[str, int]) -> None`, which rewrites the scores in place."""
        ...


# -- loading and selecting plugins -----------------------------------------------------


class PluginError(ValueError):
    """A plugin that cannot be loaded, or a --plugins value naming no known plugin."""


PluginFactory = Callable[[], Any]


def discover_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, PluginFactory]:
    """Installed plugins: entry-point name -> the class or factory it points at."""
    found: dict[str, PluginFactory] = {}
    for entry in importlib.metadata.entry_points(group=group):
        try:
            target = entry.load()
        except Exception as e:  # a broken plugin package must name itself, not crash anonymously
            raise PluginError(f"scheduler plugin {entry.name} ({entry.value}) cannot be loaded: {e}") from e
        if not callable(target):
            raise PluginError(f"scheduler plugin {entry.name} ({entry.value}) is not a class or factory")
        found[entry.name] = target
    return found


def instantiate(name: str, factory: PluginFactory) -> Any:
    plugin = factory()
    plugin_name = getattr(plugin, "name", None)
    if plugin_name != name:
        raise PluginError(f"scheduler plugin {name}: the object it makes is named {plugin_name!r}, not {name!r}")
    if not isinstance(plugin, FilterPlugin | ScorePlugin):
        raise PluginError(f"scheduler plugin {name} has neither a filter nor a score method")
    return plugin


def select_plugins(known: Sequence[str], selection: str | Iterable[str]) -> list[str]:
    """Karmada's `--plugins`: `*` enables every known plugin, `Name` enables one, `-Name`
    disables one (in either order: `-Name,*` works too). The result keeps `known`'s order.

    Unlike Karmada, which ignores them, names no plugin answers to are an error: a typo
    would otherwise silently switch a rule off.
    """
    items = [s.strip() for s in (selection.split(",") if isinstance(selection, str) else selection)]
    items = [s for s in items if s]
    unknown = [s.lstrip("-") for s in items if s != "*" and s.lstrip("-") not in known]
    if unknown:
        raise PluginError(f"unknown scheduler plugin(s) {', '.join(unknown)}; known: {', '.join(known)}")
    enabled = set(known) if "*" in items else set()
    enabled |= {s for s in items if s != "*" and not s.startswith("-")}
    enabled -= {s[1:] for s in items if s.startswith("-")}
    return [name for name in known if name in enabled]
