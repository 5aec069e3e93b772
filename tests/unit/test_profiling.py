"""A service's CPU profiles (flotilla.runtime.profiling): one file per window between SIGUSR1
and SIGUSR2, so a benchmark's rollout and each of its failovers can be read apart."""

from __future__ import annotations

import os
import pstats
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from flotilla.runtime import profiling


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGUSR2)
    yield
    signal.signal(signal.SIGUSR1, saved[0])
    signal.signal(signal.SIGUSR2, saved[1])


def busy(n: int) -> int:
    return sum(i * i for i in range(n))


def test_each_window_is_a_file_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: None) -> None:
    monkeypatch.setenv(profiling.ENV, str(tmp_path / "profiles"))
    profiling.install("executor")
    for _ in range(2):
        signal.raise_signal(signal.SIGUSR1)
        busy(1000)
        signal.raise_signal(signal.SIGUSR2)
    signal.raise_signal(signal.SIGUSR2)  # a stop with no window open writes nothing
    written = sorted(p.name for p in (tmp_path / "profiles").iterdir())
    assert written == [f"executor-{os.getpid()}-1.prof", f"executor-{os.getpid()}-2.prof"]
    for name in written:
        functions = {f for _, _, f in pstats.Stats(str(tmp_path / "profiles" / name)).stats}  # type: ignore[attr-defined]
        assert "busy" in functions


def test_nothing_is_installed_without_the_variable(monkeypatch: pytest.MonkeyPatch, handlers: None) -> None:
    monkeypatch.delenv(profiling.ENV, raising=False)
    before = signal.getsignal(signal.SIGUSR1)
    profiling.install("executor")
    assert signal.getsignal(signal.SIGUSR1) is before
