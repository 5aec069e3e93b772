"""`flotilla demo [--keep]`: the failover walkthrough of the CLI contract, narrated as it happens.

A fresh plane (`up --profile demo --sim-clusters 3`) in a data dir of its own (./.flotilla-demo)
with its etcd on a free port, so it never meets a plane the user runs; the user's current-context
pointer is left as it was. Then: the nginx example split member1:1, member2:2; member1 goes down
and Flotilla detects it, taints it, evicts nginx and reschedules it onto member2; member1 comes
back, its leftover copy is deleted and nothing moves back; an application failover on member3;
and the failover's timeline with its recovery time.

Every step waits for its condition with a deadline (the only timed wait is a "stays for N s"
check) and is printed with the time it happened. A claim the narration makes about what happened
is checked against what the demo observed before it is printed: the eviction came no sooner than
the toleration after the NoExecute taint, the graceful eviction task was dropped only after the
binding reported the new replicas ready, member1 still had its copy when it came back, and
member3 stayed Ready through the application failover. The command exits 0 only if every step
happened and every check held; otherwise it names the step that timed out or the check that
failed and exits 1. The plane is stopped at the
end, on Ctrl-C and on errors, unless `--keep` is given.

The demo talks to the plane through the library: the store (informers on clusters and bindings,
so short-lived states are never missed), the admission path of `flotillactl apply`, the
simulator's admin API (flotilla.plane.simclient) and the members' API servers (flotilla.member).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Generic, TextIO, TypeVar

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.security import context as ctx
from flotilla.security import tls

DEFAULT_DATA_DIR = "./.flotilla-demo"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POLL = 0.2

M = TypeVar("M", bound=Message)


# -- narration and the timeline (pure) --------------------------------------------------------

def narration_line(at: datetime, elapsed: float, text: str) -> str:
    """One narrated step: wall-clock time, seconds since the demo started, what happened."""
    return f"[{at.astimezone().strftime('%H:%M:%S')} +{elapsed:5.1f}s] {text}"


def detail_lines(lines: Sequence[str], indent: str = "      ") -> list[str]:
    """Supporting output (a table, an apply result) under a narrated line."""
    return [f"{indent}{line}" if line else "" for line in lines]


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    source: str  # who did or saw it: demo, cluster status, taint manager, events, failover history
    text: str


def recovery_seconds(time_: datetime | None, recovered: datetime | None) -> float | None:
    """`recoveredTime - time` of a failoverHistory record; None while it is still recovering."""
    if time_ is None or recovered is None:
        return None
    return (recovered - time_).total_seconds()


def format_timeline(title: str, fault_at: datetime, entries: Sequence[TimelineEntry],
                    recovery: float | None, back_to_normal: float | None = None) -> list[str]:
    """The failover as a table: time since the fault, who, what; then the recovery times."""
    lines = [title, f"  {'SINCE FAULT':>11}  {'SOURCE':<18} WHAT"]
    for entry in sorted(entries, key=lambda e: e.at):
        since = (entry.at - fault_at).total_seconds()
        lines.append(f"  {since:+10.1f}s  {entry.source:<18} {entry.text}")
    if recovery is None:
        lines.append("  Recovery time: not recorded (the new placement never reported Healthy)")
    else:
        lines.append(f"  Recovery time (eviction -> every new replica Healthy, from status.failoverHistory): "
                     f"{recovery:.1f}s")
    if back_to_normal is not None:
        lines.append(f"  From member1 going down to the template reading 3/3 again: {back_to_normal:.1f}s")
    return lines


def event_text(reason: str, message: str, limit: int = 90) -> str:
    """An Event on one line: its reason, then its message cut to `limit` characters."""
    text = f"{reason}: {' '.join(message.split())}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def ts(timestamp: Timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=UTC)


# -- the step runner --------------------------------------------------------------------------

class StepTimedOut(Exception):
    """A step whose condition did not hold within its deadline."""

    def __init__(self, what: str, timeout: float, last: str = "") -> None:
        super().__init__(f"step timed out after {timeout:g}s: {what}" + (f" (last seen: {last})" if last else ""))
        self.what = what


class StepBroken(Exception):
    """A "stays for N s" check that stopped holding."""

    def __init__(self, what: str, last: str = "") -> None:
        super().__init__(f"step failed: {what} no longer held" + (f" ({last})" if last else ""))
        self.what = what


class CheckFailed(Exception):
    """A narrated claim that what the demo observed does not bear out."""

    def __init__(self, claim: str, observed: str) -> None:
        super().__init__(f"check failed: {claim}: {observed}")
        self.claim = claim


# -- the claims the narration makes, checked against what was observed (pure) -----------------

def ready_condition(cluster: Any) -> str:
    from flotilla.api.conditions import get_condition

    # The status itself, not cluster_ready's yes or no: the narration names it (Ready=False, absent).
    condition = get_condition(cluster.status.conditions, "Ready")
    return condition.status if condition is not None else ""


def stayed_ready(name: str, versions: Sequence[Any]) -> str | None:
    """What contradicts "the cluster stayed Ready": a version of it, in the order they arrived,
    whose Ready condition is not True; None when every one is True."""
    if not versions:
        return f"no version of {name} was observed"
    for version in versions:
        status = ready_condition(version)
        if status != "True":
            return f"{name} was seen with Ready={status or 'absent'}"
    return None


def toleration_outlasted(taint_added: datetime, evicted: datetime, toleration: float) -> str | None:
    """What contradicts "the taint outlasted the toleration": an eviction decided (its task's
    creationTimestamp) sooner than `toleration` seconds after the taint's timeAdded, which is
    what a toleration counts from; None when it came no sooner."""
    waited = (evicted - taint_added).total_seconds()
    if waited < toleration:
        return f"evicted {waited:.3f} s after the taint was added, within the {toleration:g} s toleration"
    return None


def ready_replicas(item: Any) -> int:
    """readyReplicas in an aggregatedStatus item's collected status (0 if it has none)."""
    try:
        status = json.loads(item.status or b"{}")
    except ValueError:
        return 0
    return int(status.get("readyReplicas") or 0) if isinstance(status, dict) else 0


def dropped_after_ready(versions: Sequence[Any], evicted_from: str, to: str, replicas: int
                        ) -> tuple[int, int] | str:
    """The graceful eviction task was dropped only once the new replicas were ready: among a
    binding's versions in the order etcd wrote them, the first without `evicted_from`'s task
    (after one with it) comes at or after the first whose aggregatedStatus reports `to` Healthy
    with `replicas` ready. Returns the two versions' indexes, or what contradicts it."""
    def has_task(binding: Any) -> bool:
        return any(t.from_cluster == evicted_from for t in binding.spec.graceful_eviction_tasks)

    def ready(binding: Any) -> bool:
        return any(i.cluster_name == to and i.health == "Healthy" and ready_replicas(i) >= replicas
                   for i in binding.status.aggregated_status)

    evicted = next((i for i, b in enumerate(versions) if has_task(b)), None)
    if evicted is None:
        return f"no version with {evicted_from}'s graceful eviction task"
    dropped = next((i for i in range(evicted, len(versions)) if not has_task(versions[i])), None)
    if dropped is None:
        return f"{evicted_from}'s graceful eviction task is still there"
    healthy = next((i for i in range(evicted, dropped + 1) if ready(versions[i])), None)
    if healthy is None:
        return (f"the task was dropped before the binding reported {replicas} ready replicas in {to} "
                "(the task timed out, or the drop did not wait for the new replicas)")
    return healthy, dropped


@dataclass(frozen=True)
class Seen:
    """A condition that held: when it did (for states an informer saw, when it saw them), and what."""

    at: datetime
    detail: str = ""


Check = Callable[[], Awaitable["Seen | str | None"]]
"""Returns Seen when the condition holds, else None or a string saying what it sees instead."""


class Narrator:
    """Prints each step as it happens and runs the steps' waits, each with a deadline."""

    def __init__(self, out: TextIO = sys.stdout, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.out = out
        self.clock = clock
        self.started = clock()
        self.steps: list[tuple[datetime, str]] = []

    def now(self) -> Seen:
        return Seen(self.clock())

    def say(self, text: str, at: datetime | None = None, details: Sequence[str] = ()) -> None:
        at = at or self.clock()
        self.steps.append((at, text))
        print(narration_line(at, (at - self.started).total_seconds(), text), file=self.out)
        for line in detail_lines(details):
            print(line, file=self.out)
        self.out.flush()

    def print(self, lines: Sequence[str]) -> None:
        for line in lines:
            print(line, file=self.out)
        self.out.flush()

    async def _try(self, check: Check) -> Seen | str | None:
        try:
            return await check()
        except (CheckFailed, StepBroken):
            raise
        except Exception as e:  # a member that is down, etcd busy: "not yet", not a failure
            return f"{type(e).__name__}: {e}"[:200]

    async def step(self, what: str, check: Check, timeout: float,
                   say: str | Callable[[Seen], str] | None = None, poll: float = POLL) -> Seen:
        """Wait until `check` holds, then narrate it; StepTimedOut after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            got = await self._try(check)
            if isinstance(got, Seen):
                text = say(got) if callable(say) else (say or what)
                self.say(text, got.at)
                return got
            last = got or last
            if time.monotonic() >= deadline:
                raise StepTimedOut(what, timeout, last)
            await asyncio.sleep(poll)

    async def stays(self, what: str, check: Check, seconds: float, say: str | None = None,
                    poll: float = POLL) -> None:
        """`check` holds at every poll for `seconds` (the demo's only timed wait)."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            got = await self._try(check)
            if not isinstance(got, Seen):
                raise StepBroken(what, got or "")
            await asyncio.sleep(poll)
        self.say(say or what)


# -- what the demo watches ----------------------------------------------------------------------

@dataclass
class Version(Generic[M]):
    at: datetime
    obj: M


@dataclass
class Watched(Generic[M]):
    """Every version of one kind's objects an informer delivers, with when it arrived."""

    versions: dict[str, list[Version[M]]] = field(default_factory=dict)

    async def record(self, _type: object, obj: M, _old: M | None) -> None:
        meta = obj.metadata  # type: ignore[attr-defined]
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        self.versions.setdefault(key, []).append(Version(datetime.now(UTC), obj))

    def mark(self, key: str) -> int:
        return len(self.versions.get(key, []))

    def latest(self, key: str) -> M | None:
        found = self.versions.get(key)
        return found[-1].obj if found else None

    def first(self, key: str, since: int, predicate: Callable[[M], bool]) -> Version[M] | None:
        """The first version from index `since` on for which the predicate holds."""
        return next((v for v in self.versions.get(key, [])[since:] if predicate(v.obj)), None)


def placement(binding: Any) -> str:
    """"member1:1,member2:2", as `flotillactl get rb -o wide` shows it."""
    return ",".join(f"{t.name}:{t.replicas}" for t in binding.spec.clusters) if binding is not None else ""


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the demo like Ctrl-C does, so the plane is stopped either way."""
    def interrupt(_sig: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def prepare_data_dir(data_dir: Path) -> None:
    """Start from nothing: remove what an earlier demo left, but never a directory that is not
    a Flotilla data dir."""
    if not data_dir.exists():
        return
    if any(data_dir.iterdir()) and not any((data_dir / n).exists() for n in ("etcd", "logs", "run.json", "sim")):
        raise ctx.ContextError(f"{data_dir} exists and is not a Flotilla data dir; pass another --data-dir")
    shutil.rmtree(data_dir)


def run(args: argparse.Namespace) -> int:
    """`flotilla demo`: start the plane, walk through the failover, stop the plane unless --keep."""
    from flotilla.plane.local_plane import LocalControlPlane, RunState, UpError, forget_plane, service_env
    from flotilla.store.embedded import free_port

    data_dir = Path(args.data_dir).resolve()
    narrator = Narrator()
    plane = LocalControlPlane(data_dir, None, free_port(), detach=True, extra_env=service_env("demo", {}),
                              sim_clusters=3)
    plane.ensure_not_running()
    prepare_data_dir(data_dir)
    pointer_before = _pointer_text()
    keep = False
    with signals_as_interrupt():
        try:
            narrator.say("Starting Flotilla: etcd (its database), its six services, and three simulated "
                         f"Kubernetes clusters, member1..member3 (fast demo timings; files in {data_dir})")
            plane.start()
            plane.wait_serving()
            plane.join_members()
            plane.wait_serving_also(["agent-member3"])
            plane.wait_clusters_ready(60)
            # The plane's own context, for `flotilla down --data-dir` and `flotillactl` with --keep;
            # the user's current-context pointer stays as it was.
            plane.context().save()
            narrator.say("Three member clusters joined and Ready. Flotilla pushes workloads to member1 and "
                         "member2 (Push mode); member3 runs an agent that pulls its own (Pull mode).")
            asyncio.run(Walkthrough(narrator, plane.endpoints, data_dir).run())
            keep = args.keep
        except (StepTimedOut, StepBroken, CheckFailed) as e:
            print(f"flotilla demo: {e}", file=sys.stderr)
            print(f"flotilla demo: the services' logs are in {data_dir / 'logs'}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nflotilla demo: interrupted", file=sys.stderr)
            return 130
        except (UpError, TimeoutError) as e:
            raise UpError(f"{e} (logs: {data_dir / 'logs'})") from e
        finally:
            if not keep:
                with contextlib.suppress(KeyboardInterrupt):
                    plane.stop()
                    RunState.path(data_dir).unlink(missing_ok=True)
                    forget_plane(data_dir)
                    _restore_pointer(pointer_before)
    narrator.say("Demo complete: every step happened and every check held."
                 + ("" if keep else " The plane is stopped."))
    if keep:
        _print_keep(narrator, plane.context(), data_dir)
    return 0


def _pointer_text() -> str | None:
    try:
        return ctx.pointer_path().read_text()
    except OSError:
        return None


def _restore_pointer(text: str | None) -> None:
    """The pointer exactly as it was before the demo (nothing here writes it; this makes sure)."""
    if _pointer_text() == text:
        return
    path = ctx.pointer_path()
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        tls.write_file(path, text.encode())


def _print_keep(narrator: Narrator, context: ctx.Context, data_dir: Path) -> None:
    from flotilla.security import crypto

    credentials = {**tls.process_env(context.tls()), crypto.ENV_KEY_FILE: context.encryption_key_file}
    narrator.print([
        "",
        "The plane keeps running (--keep). Your current flotilla context is unchanged; to use this plane:",
        f"  export FLOTILLA_ETCD_ENDPOINTS={context.etcd_endpoints}",
        *(f"  export {name}={value}" for name, value in credentials.items()),
        "  flotillactl get clusters",
        "  flotillactl get rb -o wide",
        "  flotillactl describe rb nginx-deployment",
        f"  flotilla sim fault member2 down --data-dir {data_dir}",
        f"  KUBECONFIG={data_dir / 'sim' / 'kubeconfigs' / 'member1.yaml'} kubectl get deployments,pods",
        "Stop it with:",
        f"  flotilla down --data-dir {data_dir}",
    ])


class Walkthrough:
    """The steps after the plane is up, against its etcd, its simulator and its members."""

    def __init__(self, narrator: Narrator, endpoints: str, data_dir: Path) -> None:
        self.n = narrator
        self.endpoints = endpoints
        self.data_dir = data_dir

    async def run(self) -> None:
        from flotilla.api import registry
        from flotilla.member import MemberClient, load_kubeconfig
        from flotilla.store import Store
        from flotilla.store.informer import Informer

        store = await Store.connect(self.endpoints)
        self.store = store
        self.clusters: Watched[Any] = Watched()
        self.bindings: Watched[Any] = Watched()
        informers: list[Informer[Any]] = [Informer(store, registry.CLUSTER), Informer(store, registry.RESOURCE_BINDING)]
        informers[0].add_handler(self.clusters.record)
        informers[1].add_handler(self.bindings.record)
        tasks = [asyncio.create_task(i.run()) for i in informers]
        self.members = {name: MemberClient(load_kubeconfig(self.data_dir / "sim" / "kubeconfigs" / f"{name}.yaml"),
                                           timeout=1.0) for name in ("member1", "member2", "member3")}
        try:
            for informer in informers:
                await informer.wait_synced()
            await self.walk()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for client in self.members.values():
                await client.close()
            await store.close()

    # -- reads --------------------------------------------------------------------------------

    async def sim_address(self) -> str:
        context = ctx.Context.load(self.data_dir)
        assert context is not None and context.sim_address
        return context.sim_address

    async def apply(self, filename: str) -> list[str]:
        """`flotillactl apply -f examples/FILE`, in-process (through admission, like the CLI)."""
        from flotilla.cli.apply import cmd_apply

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = await cmd_apply(argparse.Namespace(etcd_endpoints=self.endpoints,
                                                      filename=[str(EXAMPLES / filename)]))
        if code != 0:
            raise StepBroken(f"applying examples/{filename}", out.getvalue().strip())
        return out.getvalue().splitlines()

    async def fault(self, cluster: str, fault: str) -> None:
        from flotilla.plane import simclient

        await simclient.set_fault(await self.sim_address(), cluster, fault)

    async def app_fault(self, cluster: str, name: str, healthy: bool) -> None:
        from flotilla.plane import simclient

        await simclient.set_app_fault(await self.sim_address(), cluster, "default", name, healthy=healthy)

    def binding_placed(self, name: str, want: str, since: int = 0) -> Check:
        key = f"default/{name}"

        async def check() -> Seen | str | None:
            found = self.bindings.first(key, since, lambda b: placement(b) == want)
            return Seen(found.at, want) if found else placement(self.bindings.latest(key)) or "not placed"
        return check

    def ready_in(self, cluster: str, name: str, want: int) -> Check:
        """The member's own Deployment reports `want` of `want` replicas ready."""
        async def check() -> Seen | str | None:
            obj = await self.members[cluster].get("apps/v1", "Deployment", "default", name)
            if obj is None:
                return f"no {name} in {cluster}"
            status, spec = obj.get("status") or {}, obj.get("spec") or {}
            ready, desired = int(status.get("readyReplicas") or 0), int(spec.get("replicas") or 0)
            return self.n.now() if (ready, desired) == (want, want) else f"{ready}/{desired} ready in {cluster}"
        return check

    def template_ready(self, name: str, want: int) -> Check:
        from flotilla.api import registry

        rt = registry.template_type("apps/v1", "Deployment")

        async def check() -> Seen | str | None:
            obj = await self.store.try_get(rt, "default", name)
            body = json.loads(obj.content) if obj is not None and obj.content else {}
            ready = int((body.get("status") or {}).get("readyReplicas") or 0)
            return self.n.now() if ready == want else f"template {name} reads {ready}/3"
        return check

    def cluster_state(self, name: str, since: int, predicate: Callable[[Any], bool], detail: str) -> Check:
        async def check() -> Seen | str | None:
            found = self.clusters.first(name, since, predicate)
            return Seen(found.at, detail) if found else None
        return check

    # -- the walkthrough ---------------------------------------------------------------------

    async def walk(self) -> None:
        from flotilla.api.taints import TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE
        from flotilla.plane.profiles import PROFILES
        from flotilla.runtime.flags import duration

        n = self.n
        demo = PROFILES["demo"]
        failure_threshold = duration(demo["FLOTILLA_CLUSTER_FAILURE_THRESHOLD"])
        success_threshold = duration(demo["FLOTILLA_CLUSTER_SUCCESS_THRESHOLD"])
        toleration = int(demo["FLOTILLA_DEFAULT_NOT_READY_TOLERATION_SECONDS"])
        health_taints = (TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE)

        ready_status = ready_condition

        def tainted(effect: str) -> Callable[[Any], bool]:
            return lambda c: any(t.key in health_taints and t.effect == effect for t in c.spec.taints)

        # 2. nginx, split 1:2.
        applied_at = n.clock()
        applied = await self.apply("nginx-divided.yaml")
        n.say("Applying examples/nginx-divided.yaml: an nginx Deployment with 3 replicas, and a policy that "
              "shares them between member1 and member2 in the ratio 1:2", applied_at, details=applied)
        await n.step("nginx placed member1:1, member2:2",
                     self.binding_placed("nginx-deployment", "member1:1,member2:2"), 60,
                     "The scheduler placed nginx: 1 replica on member1, 2 on member2")
        await n.step("nginx 1/1 ready in member1", self.ready_in("member1", "nginx", 1), 60)
        await n.step("nginx 2/2 ready in member2", self.ready_in("member2", "nginx", 2), 60)
        await n.step("the nginx template reading 3/3", self.template_ready("nginx", 3), 60,
                     "member1 runs 1/1 and member2 2/2 ready replicas; the nginx Deployment Flotilla holds "
                     "reads 3/3 ready")

        # 3. member1 fails.
        key = "default/nginx-deployment"
        cluster_mark, binding_mark = self.clusters.mark("member1"), self.bindings.mark(key)
        await self.fault("member1", "down")
        fault_at = n.clock()
        n.say("member1 goes down: its API server stops answering (a simulated outage)", fault_at)
        seen: list[TimelineEntry] = []
        not_ready = await n.step(
            "member1 marked not Ready",
            self.cluster_state("member1", cluster_mark, lambda c: ready_status(c) not in ("True", ""), "Ready=False"),
            30, f"member1 stopped answering; Flotilla marks it not Ready after {failure_threshold:g} s of failed "
                "probes")
        seen.append(TimelineEntry(not_ready.at, "cluster status", "member1 Ready=False"))
        no_schedule = await n.step("member1 tainted NoSchedule",
                                   self.cluster_state("member1", cluster_mark, tainted("NoSchedule"), ""), 30,
                                   "Flotilla taints member1 NoSchedule: nothing new will be placed there")
        seen.append(TimelineEntry(no_schedule.at, "cluster taints", "member1 tainted NoSchedule"))
        no_execute = await n.step("member1 tainted NoExecute",
                                  self.cluster_state("member1", cluster_mark, tainted("NoExecute"), ""), 30,
                                  f"Then NoExecute: workloads that do not tolerate it for {toleration} s "
                                  "will be moved off")

        async def evicted() -> Seen | str | None:
            found = self.bindings.first(key, binding_mark, lambda b: any(
                t.from_cluster == "member1" for t in b.spec.graceful_eviction_tasks))
            if found is None:
                return None
            task = next(t for t in found.obj.spec.graceful_eviction_tasks if t.from_cluster == "member1")
            tainted_version = self.clusters.first("member1", cluster_mark, tainted("NoExecute"))
            if tainted_version is None or not task.HasField("creation_timestamp"):
                raise CheckFailed("the eviction came no sooner than the toleration",
                                  "no NoExecute taint, or an eviction task without its creationTimestamp")
            taint = next(t for t in tainted_version.obj.spec.taints
                         if t.key in health_taints and t.effect == "NoExecute")
            added, at = ts(taint.time_added), ts(task.creation_timestamp)
            problem = toleration_outlasted(added, at, toleration)
            if problem is not None:
                raise CheckFailed(f"the taint outlasted nginx's {toleration} s toleration", problem)
            return Seen(found.at, f"{(at - added).total_seconds():.1f}")
        seen.append(TimelineEntry(no_execute.at, "cluster taints", "member1 tainted NoExecute"))
        eviction = await n.step("nginx evicted from member1", evicted, 60, lambda got: (
            f"The taint outlasted nginx's {toleration} s toleration (evicted {got.detail} s after the NoExecute "
            "taint's timeAdded): Flotilla evicts nginx from member1. It keeps member1's copy (a graceful "
            "eviction task) until the replacement is ready"))
        seen.append(TimelineEntry(eviction.at, "binding", "graceful eviction task for member1 added"))
        moved = await n.step("nginx rescheduled to member2:3", self.binding_placed("nginx-deployment", "member2:3",
                                                                           binding_mark), 60,
                     "The scheduler moves member1's replica to member2: member2 now gets all 3")
        seen.append(TimelineEntry(moved.at, "binding", "placed member2:3"))
        ready = await n.step("3 replicas ready in member2", self.ready_in("member2", "nginx", 3), 60,
                     "member2 runs 3/3 ready replicas of nginx")

        async def task_dropped() -> Seen | str | None:
            binding = self.bindings.latest(key)
            if binding is None:
                return "no binding"
            if any(t.from_cluster == "member1" for t in binding.spec.graceful_eviction_tasks):
                return "graceful eviction task still there"
            versions = [v.obj for v in self.bindings.versions.get(key, [])[binding_mark:]]
            order = dropped_after_ready(versions, "member1", "member2", 3)
            if isinstance(order, str):
                raise CheckFailed("the graceful eviction task was dropped after the new replicas were ready", order)
            return Seen(self.bindings.versions[key][binding_mark + order[1]].at)
        seen.append(TimelineEntry(ready.at, "member2", "3/3 replicas ready"))
        dropped = await n.step("the graceful eviction task dropped", task_dropped, 60,
                     "The binding reports the 3 new replicas ready in member2, and only then Flotilla drops the "
                     "graceful eviction task: member1's copy is no longer needed")
        seen.append(TimelineEntry(dropped.at, "binding", "graceful eviction task dropped"))
        back = await n.step("the nginx template reading 3/3 again", self.template_ready("nginx", 3), 60,
                            "The nginx Deployment reads 3/3 ready again, all on member2")

        async def recovered() -> Seen | str | None:
            binding = self.bindings.latest(key)
            records = [r for r in binding.status.failover_history if r.from_cluster == "member1"] if binding else []
            if records and records[-1].HasField("recovered_time"):
                return n.now()
            return "failoverHistory has no recoveredTime yet"
        await n.step("the failover recorded with its recovery time", recovered, 60,
                     "Flotilla records the failover in the binding's status.failoverHistory, with when it recovered")

        # 4. member1 comes back.
        cluster_mark = self.clusters.mark("member1")
        await self.fault("member1", "recover")
        n.say("member1 comes back: its API server answers again")

        # Flotilla deletes member1's copy only once member1 is Ready again (its success threshold),
        # so the copy is there to be seen as soon as member1 answers.
        async def copy_in_member1() -> Seen | str | None:
            obj = await self.members["member1"].get("apps/v1", "Deployment", "default", "nginx")
            if obj is None:
                raise CheckFailed("member1 still had its copy of nginx", "nginx was gone from member1 when it answered")
            return n.now()
        await n.step("member1 still runs its copy of nginx", copy_in_member1, 30,
                     "member1 still has the copy of nginx it ran before it went down")
        await n.step("member1 Ready", self.cluster_state("member1", cluster_mark, lambda c: ready_status(c) == "True",
                                                         ""), 60,
                     f"Flotilla marks member1 Ready again after {success_threshold:g} s of good probes")
        await n.step("member1 untainted", self.cluster_state(
            "member1", cluster_mark, lambda c: ready_status(c) == "True" and not any(
                t.key in health_taints for t in c.spec.taints), ""), 60,
                     "Flotilla removes its taints: new work may go there again")

        async def gone_from_member1() -> Seen | str | None:
            obj = await self.members["member1"].get("apps/v1", "Deployment", "default", "nginx")
            return n.now() if obj is None else "nginx is still in member1"
        await n.step("the leftover nginx deleted from member1", gone_from_member1, 90,
                     "Flotilla deletes the copy of nginx that member1 still had")

        async def no_work_in_member1() -> Seen | str | None:
            from flotilla.api import keys, registry

            works = await self.store.list(registry.WORK, keys.execution_namespace("member1"))
            names = [w.metadata.name for w in works.items if w.metadata.name.startswith("nginx-")]
            return n.now() if not names else f"Work {names[0]} still there"
        await n.step("member1's Work gone", no_work_in_member1, 60,
                     "member1's Work for it (the copy of nginx Flotilla kept for member1) is gone")
        stay = 5
        stay_mark = self.bindings.mark(key)

        async def still_on_member2() -> Seen | str | None:
            versions = [v.obj for v in self.bindings.versions.get(key, [])[stay_mark:]]
            moved = [placement(b) for b in versions if placement(b) != "member2:3"]
            latest = placement(self.bindings.latest(key))
            return n.now() if latest == "member2:3" and not moved else f"placed {(moved or [latest])[0]}"
        await n.stays(f"nginx stays on member2 for {stay} s", still_on_member2, stay,
                      f"Nothing moves back: nginx stays on member2 (checked for {stay} s), 3/3 ready")
        await n.step("the nginx template still reading 3/3", self.template_ready("nginx", 3), 10,
                     "The nginx Deployment still reads 3/3 ready")

        # 5. The timeline of the failover.
        await self.print_timeline(fault_at, seen, back.at)

        # 6. Application failover.
        applied_at = n.clock()
        applied = await self.apply("nginx-app-failover.yaml")
        n.say("Application failover: applying examples/nginx-app-failover.yaml, an api Deployment split 1:1 "
              "over member2 and member3, moved if it stays unhealthy for 5 s", applied_at, details=applied)
        await n.step("api placed member2:1, member3:1", self.binding_placed("api-deployment", "member2:1,member3:1"),
                     60, "The scheduler placed api: 1 replica on member2, 1 on member3")
        await n.step("api ready in member3", self.ready_in("member3", "api", 1), 60, "api is 1/1 ready in member3")
        api_mark = self.bindings.mark("default/api-deployment")
        member3_before, member3_mark = self.clusters.latest("member3"), self.clusters.mark("member3")
        await self.app_fault("member3", "api", healthy=False)
        n.say("api's pods on member3 stop being ready (the application crashes); member3 itself is left running")
        moved_off = await n.step("api moved off member3",
                                 self.binding_placed("api-deployment", "member2:2", api_mark), 60,
                                 "api stayed unhealthy on member3 for 5 s: Flotilla moves its replica to member2 "
                                 "(member2:2)")
        # Every version of member3 from before the crash to the move, as the informer delivered them.
        member3 = [member3_before] if member3_before is not None else []
        member3 += [v.obj for v in self.clusters.versions.get("member3", [])[member3_mark:] if v.at <= moved_off.at]
        problem = stayed_ready("member3", member3)
        if problem is not None:
            raise CheckFailed("member3 stayed Ready through the application failover", problem)
        n.say(f"member3 stayed Ready throughout ({len(member3)} version(s) of it seen, each Ready=True): it was "
              "the application that failed over, not the cluster")
        api = self.bindings.latest("default/api-deployment")
        records = list(api.status.failover_history) if api is not None else []
        n.print(detail_lines([f"failover history of api: {r.from_cluster} -> {','.join(r.to_clusters)} "
                              f"({r.reason}, by {r.producer})" for r in records]))

    async def print_timeline(self, fault_at: datetime, seen: list[TimelineEntry], back_at: datetime) -> None:
        from flotilla.store.events import events_for

        key = "default/nginx-deployment"
        binding = self.bindings.latest(key)
        cluster = self.clusters.latest("member1")
        entries = [TimelineEntry(fault_at, "demo", "member1 goes down"), *seen]
        recovery = None
        if binding is not None:
            for r in binding.status.failover_history:
                if r.from_cluster != "member1" or not r.HasField("time"):
                    continue
                entries.append(TimelineEntry(ts(r.time), "failover history",
                                             f"evicted from member1 ({r.reason}), to {','.join(r.to_clusters)}"))
                if r.HasField("recovered_time"):
                    entries.append(TimelineEntry(ts(r.recovered_time), "failover history",
                                                 "every new replica Healthy: recovered"))
                recovery = recovery_seconds(ts(r.time), ts(r.recovered_time) if r.HasField("recovered_time")
                                            else None)
        entries.append(TimelineEntry(back_at, "demo", "nginx template reads 3/3 again"))
        for obj in (cluster, binding):
            if obj is None:
                continue
            for event in await events_for(self.store, obj):
                at = ts(event.first_timestamp) if event.HasField("first_timestamp") else ts(event.last_timestamp)
                if at >= fault_at.replace(microsecond=0) and at <= back_at:
                    entries.append(TimelineEntry(at, "event", event_text(event.reason, event.message)))
        lines = format_timeline("The failover of member1, step by step (from status.failoverHistory, the Events, "
                                "and what the demo saw):", fault_at, entries, recovery,
                                (back_at - fault_at).total_seconds())
        self.n.say("The failover's timeline", details=[])
        self.n.print(lines)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run the failover walkthrough on a fresh plane, narrated")
    p.add_argument("--keep", action="store_true", help="leave the plane running at the end")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the demo plane's files (default %(default)s)")
