"""The plugin framework: which plugins run, and running them over the clusters.

Every filter must pass; the first that fails a cluster is recorded with its reason
(that is what `explain` and the decision log show). Scores of the plugins are summed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from flotilla.scheduler.plugin_api import (
    SUCCESS,
    BindingInfo,
    ClusterInfo,
    Code,
    PluginError,
    PluginFactory,
    Result,
    discover_plugins,
    instantiate,
    select_plugins,
)
from flotilla.scheduler.plugins import BUILTIN


class Unfit(NamedTuple):
    cluster: str
    plugin: str
    reason: str


class PluginFailure(Exception):
    """A plugin could not decide (returned Error or raised): the binding is retried."""


class Framework:
    def __init__(self, plugins: Sequence[Any]) -> None:
        self.plugins = list(plugins)
        self._filters = [(p.name, p.filter) for p in self.plugins if callable(getattr(p, "filter", None))]
        self._prefilters = [(p.name, p.prefilter) for p in self.plugins
                            if callable(getattr(p, "filter", None)) and callable(getattr(p, "prefilter", None))]
        # (plugin, candidates, passing) -> the Unfit records for the rest. Prefilters hand back the
        # same objects for the same snapshot, so bindings of one policy share one list.
        self._ruled_out: dict[tuple[str, int, int], tuple[object, object, list[Unfit]]] = {}
        self._scores = [p for p in self.plugins if callable(getattr(p, "score", None))]

    @classmethod
    def build(cls, selection: str = "*", installed: Mapping[str, PluginFactory] | None = None) -> Framework:
        """Built-ins plus the plugins installed under the entry-point group, narrowed by `--plugins`."""
        installed = discover_plugins() if installed is None else installed
        clashes = sorted(set(installed) & set(BUILTIN))
        if clashes:
            raise PluginError(f"installed scheduler plugin(s) {', '.join(clashes)} clash with built-in ones")
        known: dict[str, PluginFactory] = {**BUILTIN, **dict(sorted(installed.items()))}
        return cls([instantiate(name, known[name]) for name in select_plugins(list(known), selection)])

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    def filter(self, binding: BindingInfo, clusters: Sequence[ClusterInfo]) -> tuple[list[ClusterInfo], list[Unfit]]:
        feasible: list[ClusterInfo] = []
        unfit: list[Unfit] = []
        for name, narrow in self._prefilters:
            try:
                narrowed = narrow(binding, clusters)
            except Exception as e:
                raise PluginFailure(f"plugin {name} failed: {e}") from e
            if narrowed is None:
                continue
            passing, result = narrowed
            if len(passing) < len(clusters):
                unfit.extend(self._rule_out(name, clusters, passing, result))
                clusters = passing
        filters = self._filters
        for cluster in clusters:
            for name, run in filters:
                try:
                    result = run(binding, cluster)
                except Exception as e:
                    raise PluginFailure(f"plugin {name} failed on cluster {cluster.name}: {e}") from e
                if result is not SUCCESS and result.code is not Code.SUCCESS:
                    if result.code is Code.ERROR:
                        raise PluginFailure(f"plugin {name} failed on cluster {cluster.name}: {result.reason()}")
                    unfit.append(Unfit(cluster.name, name, _reason(result)))
                    break
            else:
                feasible.append(cluster)
        return feasible, unfit

    def _rule_out(self, plugin: str, clusters: Sequence[ClusterInfo], passing: Sequence[ClusterInfo],
                  result: Result) -> list[Unfit]:
        key = (plugin, id(clusters), id(passing))
        known = self._ruled_out.get(key)
        if known is not None and known[0] is clusters and known[1] is passing:
            return known[2]
        kept = {id(c) for c in passing}
        reason = _reason(result)
        ruled_out = [Unfit(c.name, plugin, reason) for c in clusters if id(c) not in kept]
        if len(self._ruled_out) >= 4096:
            self._ruled_out.clear()
        self._ruled_out[key] = (clusters, passing, ruled_out)
        return ruled_out

    def score(self, binding: BindingInfo, clusters: Sequence[ClusterInfo]) -> dict[str, int]:
        total = dict.fromkeys((c.name for c in clusters), 0)
        for plugin in self._scores:
            try:
                scores = {c.name: plugin.score(binding, c) for c in clusters}
                normalize = getattr(plugin, "normalize", None)
                if callable(normalize):
                    normalize(binding, scores)
            except Exception as e:
                raise PluginFailure(f"plugin {plugin.name} failed to score: {e}") from e
            for name, value in scores.items():
                total[name] += value
        return total


def _reason(result: Result) -> str:
    return result.reasons[0] if len(result.reasons) == 1 else result.reason()


def fit_error_message(total: int, unfit: Sequence[Unfit]) -> str:
    """Karmada's FitError: `0/3 clusters are available: 1 cluster(s) had untolerated taint {…}, 2 …`."""
    counts: dict[str, int] = {}
    for item in unfit:
        counts[item.reason] = counts.get(item.reason, 0) + 1
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} clusters are available: {', '.join(histogram)}."
