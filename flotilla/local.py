"""`flotilla`: run the whole control plane on one machine.

`flotilla up` starts an embedded etcd (unless `--etcd-endpoints` names one)
and every service as its own process; `--detach` leaves them running and
records them in `<data-dir>/run.json` so `flotilla down` can stop them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flotilla.store.embedded import EmbeddedEtcd, EtcdError, free_port, port_is_free

# Every service that exists so far, in start order. The list grows as services land.
SERVICES = ["webhook"]

DEFAULT_ETCD_PORT = 2379


class UpError(RuntimeError):
    pass


@dataclass
class RunState:
    """What `up --detach` started, for `down`."""

    etcd_endpoints: str
    etcd_pid: int = 0
    services: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def path(data_dir: Path) -> Path:
        return data_dir / "run.json"

    def save(self, data_dir: Path) -> None:
        self.path(data_dir).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, data_dir: Path) -> RunState | None:
        try:
            return cls(**json.loads(cls.path(data_dir).read_text()))
        except FileNotFoundError:
            return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate(pids: list[int], timeout: float = 10.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids:
        while _pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


class LocalControlPlane:
    def __init__(self, data_dir: Path, etcd_endpoints: str | None, etcd_port: int | None,
                 detach: bool, extra_env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.external_etcd = etcd_endpoints
        self.etcd_port = etcd_port
        self.detach = detach
        self.extra_env = extra_env or {}
        self.etcd: EmbeddedEtcd | None = None
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def endpoints(self) -> str:
        if self.external_etcd:
            return self.external_etcd
        assert self.etcd is not None
        return self.etcd.endpoint

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        previous = RunState.load(self.data_dir)
        if previous and any(_pid_alive(p) for p in [previous.etcd_pid, *previous.services.values()] if p):
            raise UpError(
                f"already running from {self.data_dir} (run `flotilla down --data-dir {self.data_dir}` first)"
            )
        if not self.external_etcd:
            port = self.etcd_port or (DEFAULT_ETCD_PORT if port_is_free(DEFAULT_ETCD_PORT) else free_port())
            if not port_is_free(port):
                raise UpError(f"etcd port {port} is taken")
            self.etcd = EmbeddedEtcd(self.data_dir / "etcd", client_port=port)
            self.etcd.start(detach=self.detach)
        logs = self.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        env = {**os.environ, **self.extra_env, "FLOTILLA_ETCD_ENDPOINTS": self.endpoints}
        for name in SERVICES:
            with open(logs / f"{name}.log", "ab") as log:
                self.processes[name] = subprocess.Popen(
                    [sys.executable, "-m", f"services.{name}", "--data-dir", str(self.data_dir)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=self.detach,
                )
        RunState(
            etcd_endpoints=self.endpoints,
            etcd_pid=self.etcd.process.pid if self.etcd and self.etcd.process else 0,
            services={n: p.pid for n, p in self.processes.items()},
        ).save(self.data_dir)

    def wait_serving(self, timeout: float = 60.0) -> None:
        from flotilla.cli.status import wait_for_services

        def check_alive() -> None:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise UpError(f"service {name} exited with code {proc.returncode}; "
                                  f"see {self.data_dir / 'logs' / (name + '.log')}")

        asyncio.run(wait_for_services(self.endpoints, SERVICES, timeout, check_alive))

    def stop(self) -> None:
        _terminate([p.pid for p in self.processes.values()])
        if self.etcd is not None:
            self.etcd.stop()


def down(data_dir: Path) -> int:
    state = RunState.load(data_dir)
    if state is None:
        print(f"nothing to stop: no {RunState.path(data_dir)}")
        return 0
    _terminate(list(state.services.values()))
    if state.etcd_pid:
        _terminate([state.etcd_pid])
    RunState.path(data_dir).unlink(missing_ok=True)
    print(f"stopped {len(state.services)} services" + (" and etcd" if state.etcd_pid else ""))
    return 0


def up(args: argparse.Namespace) -> int:
    plane = LocalControlPlane(Path(args.data_dir), args.etcd_endpoints, args.etcd_port, args.detach)
    try:
        plane.start()
        plane.wait_serving()
    except (UpError, EtcdError, TimeoutError) as e:
        plane.stop()
        RunState.path(Path(args.data_dir)).unlink(missing_ok=True)
        raise UpError(str(e)) from e
    print(f"export FLOTILLA_ETCD_ENDPOINTS={plane.endpoints}")
    if args.detach:
        return 0
    print("Flotilla is running; Ctrl-C stops it.", flush=True)
    stop = False

    def request_stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, request_stop)
    try:
        while not stop:
            for name, proc in plane.processes.items():
                if proc.poll() is not None:
                    print(f"service {name} exited with code {proc.returncode}", file=sys.stderr)
                    stop = True
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    plane.stop()
    RunState.path(Path(args.data_dir)).unlink(missing_ok=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flotilla", description="Run the Flotilla control plane.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start etcd and every service")
    p_up.add_argument("--data-dir", default="./.flotilla")
    p_up.add_argument("--etcd-endpoints", default=None, help="use this etcd instead of an embedded one")
    p_up.add_argument("--etcd-port", type=int, default=None,
                      help="port for the embedded etcd (default 2379, or a free one)")
    p_up.add_argument("--detach", action="store_true", help="return once every service is SERVING")
    p_down = sub.add_parser("down", help="stop what `up --detach` started")
    p_down.add_argument("--data-dir", default="./.flotilla")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "up":
            return up(args)
        return down(Path(args.data_dir))
    except (UpError, EtcdError, OSError) as e:
        if args.debug:
            raise
        print(f"flotilla {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
