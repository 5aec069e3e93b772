"""Cluster admission: what Karmada's aggregated API server does in its storage strategy and validation."""

from __future__ import annotations

import calendar
from collections.abc import Iterator, MutableSequence, Sequence
from datetime import UTC, datetime
from urllib.parse import SplitResult, urlsplit

from flotilla.api.codec import FieldError
from flotilla.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE
from flotilla.api.v1.cluster_pb2 import Cluster
from flotilla.api.v1.meta_pb2 import Taint
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, required, unsupported

SYNC_MODE_PUSH = "Push"
SYNC_MODES = (SYNC_MODE_PUSH, "Pull")
# PreferNoSchedule means nothing to Karmada's scheduler, so Clusters refuse it.
CLUSTER_TAINT_EFFECTS = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)
# The execution namespace `karmada-es-<cluster>` must stay a valid namespace name.
CLUSTER_NAME_MAX = 48


def default_cluster(cluster: Cluster, old: Cluster | None, now: datetime) -> None:
    spec = cluster.spec
    if not spec.sync_mode:
        spec.sync_mode = SYNC_MODE_PUSH
    if spec.zone and not spec.zones:
        # Karmada moves `zone` into `zones`; keeping it too means a user's
        # YAML reads back as written.
        spec.zones.append(spec.zone)
    stamp_no_execute_taints(spec.taints, old.spec.taints if old is not None else (), now)


def stamp_no_execute_taints(taints: MutableSequence[Taint], old_taints: Sequence[Taint], now: datetime) -> None:
    """Give every NoExecute taint a timeAdded: tolerationSeconds count from it.

    A taint the stored object already had keeps its time, so re-applying a
    Cluster YAML that omits timeAdded does not restart eviction clocks.
    NoSchedule taints are left alone, as Karmada does.
    """
    moment = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    seconds = calendar.timegm(moment.utctimetuple())
    for taint in taints:
        if taint.effect != EFFECT_NO_EXECUTE or taint.HasField("time_added"):
            continue
        earlier = _same_taint(old_taints, taint)
        if earlier is not None and earlier.HasField("time_added"):
            taint.time_added.CopyFrom(earlier.time_added)
        else:
            taint.time_added.seconds = seconds
            taint.time_added.nanos = 0


def _same_taint(taints: Sequence[Taint], wanted: Taint) -> Taint | None:
    for taint in taints:
        if (taint.key, taint.value, taint.effect) == (wanted.key, wanted.value, wanted.effect):
            return taint
    return None


def cluster_name(value: str) -> list[str]:
    if len(value) > CLUSTER_NAME_MAX:
        return [f"must be no more than {CLUSTER_NAME_MAX} characters"]
    return names.dns1123_label(value)


def validate_cluster(cluster: Cluster) -> Iterator[FieldError]:
    spec_path = "spec"
    if not cluster.spec.sync_mode:
        yield required(child(spec_path, "syncMode"))
    elif cluster.spec.sync_mode not in SYNC_MODES:
        yield unsupported(child(spec_path, "syncMode"), cluster.spec.sync_mode, SYNC_MODES)
    yield from validate_cluster_taints(cluster.spec.taints, child(spec_path, "taints"))
    yield from validate_credentials(cluster)


def validate_credentials(cluster: Cluster) -> Iterator[FieldError]:
    """Where the plane sends a member's bearer token: only over TLS, and only the token kept for
    this cluster (the Secret `flotillactl join` and `karmadactl join` write, named for it), so
    that whoever may write a Cluster cannot have another member's token sent to a host of theirs."""
    spec = cluster.spec
    if spec.api_endpoint:
        url = _split(spec.api_endpoint)
        if url is None or url.scheme != "https" or not url.hostname:
            yield FieldError("spec.apiEndpoint", f"must be an https:// URL with a host, not {spec.api_endpoint!r}")
    yield from validate_proxy(cluster)
    for field, ref in (("secretRef", spec.secret_ref), ("impersonatorSecretRef", spec.impersonator_secret_ref)):
        if not (ref.namespace or ref.name):
            continue
        expected = (CLUSTER_SECRET_NAMESPACE, cluster.metadata.name if field == "secretRef"
                    else f"{cluster.metadata.name}-impersonator")
        if (ref.namespace, ref.name) != expected:
            yield FieldError(f"spec.{field}", f"must be {expected[0]}/{expected[1]}, the Secret kept for this "
                                              f"cluster, not {ref.namespace}/{ref.name}")


def validate_proxy(cluster: Cluster) -> Iterator[FieldError]:
    """spec.proxyURL: an http:// or https:// proxy with a host (every request to the member goes
    through it, spec.proxyHeader sent to it). Karmada also takes socks5://, which the plane's HTTP
    client cannot speak: refused rather than stored and ignored."""
    spec = cluster.spec
    if spec.proxy_url:
        url = _split(spec.proxy_url)
        if url is not None and url.scheme == "socks5":
            yield FieldError("spec.proxyURL", "not supported by Flotilla: spec.proxyURL with scheme socks5 "
                                              "(use an http:// or https:// proxy)")
        elif url is None or url.scheme not in ("http", "https") or not url.hostname or not _valid_port(url):
            yield FieldError("spec.proxyURL", f"must be an http:// or https:// URL with a host, not {spec.proxy_url!r}")
    elif spec.proxy_header:
        yield FieldError("spec.proxyHeader", "needs spec.proxyURL: these headers are sent to the proxy")
    for name, value in sorted(spec.proxy_header.items()):
        if not name or any(c not in _HEADER_NAME for c in name):
            yield FieldError(f"spec.proxyHeader[{name}]", "must be an HTTP header name")
        if any(c in value for c in "\r\n\0"):
            yield FieldError(f"spec.proxyHeader[{name}]", "must not contain CR, LF or NUL")


_HEADER_NAME = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _split(url: str) -> SplitResult | None:
    """The URL's parts; None for one that does not parse (an unclosed IPv6 bracket)."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _valid_port(url: SplitResult) -> bool:
    try:
        port = url.port  # ValueError: not a number, or out of range
    except ValueError:
        return False
    return port is None or port > 0


def validate_cluster_taints(taints: Sequence[Taint], path: str) -> Iterator[FieldError]:
    seen: dict[tuple[str, str], int] = {}
    for i, taint in enumerate(taints):
        taint_path = index(path, i)
        if not taint.key:
            yield required(child(taint_path, "key"))
        else:
            yield from check(child(taint_path, "key"), taint.key, names.qualified_name)
        yield from check(child(taint_path, "value"), taint.value, names.label_value)
        if not taint.effect:
            yield required(child(taint_path, "effect"))
        elif taint.effect not in CLUSTER_TAINT_EFFECTS:
            yield unsupported(child(taint_path, "effect"), taint.effect, CLUSTER_TAINT_EFFECTS)
        identity = (taint.key, taint.effect)
        if identity in seen:
            first = index(path, seen[identity])
            yield FieldError(
                taint_path,
                f'duplicate taint: key "{taint.key}" and effect "{taint.effect}" already used by {first}; '
                "taints must be unique by key and effect",
            )
        else:
            seen[identity] = i
