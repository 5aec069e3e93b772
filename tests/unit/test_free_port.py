"""free_port: a listening port picked where the kernel's outgoing connections never go."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from flotilla.store.embedded import LISTEN_PORTS, ephemeral_ports, free_port


def test_the_port_is_outside_the_kernels_range_for_outgoing_connections() -> None:
    ephemeral = ephemeral_ports()
    ports = {free_port(rng=random.Random(seed)) for seed in range(20)}
    assert all(port not in ephemeral for port in ports)
    assert all(port in LISTEN_PORTS for port in ports)


def test_a_port_something_is_bound_to_is_passed_over() -> None:
    taken = free_port(rng=random.Random(7), handed_out=set())
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", taken))
        s.listen()
        # The same seed picks `taken` first, finds it bound, and goes on.
        assert free_port(rng=random.Random(7), handed_out=set()) != taken


def test_a_port_handed_out_is_not_handed_out_again_before_its_server_binds_it() -> None:
    handed_out: set[int] = set()
    first = free_port(rng=random.Random(11), handed_out=handed_out)
    # Nothing listens on `first` yet; the same seed picks it first again, and passes it over.
    assert free_port(rng=random.Random(11), handed_out=handed_out) != first
    assert first in handed_out


def test_the_port_can_be_listened_on() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
        s.listen()


def test_the_ephemeral_range_is_read_from_the_kernel_or_defaults(tmp_path: Path) -> None:
    configured = tmp_path / "range"
    configured.write_text("40000\t50000\n")
    assert ephemeral_ports(configured) == range(40000, 50001)
    assert ephemeral_ports(tmp_path / "missing") == range(32768, 61000)
