"""Loopback ports for local servers: a server that listens again on its port (a broker
restart, the outage proxy) gets one no outgoing connection can take in the gap."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest
from jobhooks_tools.local import ports
from jobhooks_tools.local.rabbitmq import PrivateRabbitMQNode
from jobhooks_tools.local.tcp_proxy import TcpProxy


def outside_ephemeral_range(port: int) -> bool:
    low, high = ports.ephemeral_range()
    return not low <= port <= high


def test_steady_ports_are_outside_the_ephemeral_range_and_free() -> None:
    drawn = {ports.steady_port() for _ in range(50)}
    assert all(outside_ephemeral_range(port) for port in drawn)
    assert all(port >= 10000 for port in drawn)
    assert len(drawn) > 40  # drawn at random: parallel workers rarely try the same port
    for port in drawn:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.steady_port()))
        taken.listen()
        taken_port = taken.getsockname()[1]
        monkeypatch.setattr(ports, "steady_ranges", lambda: [range(taken_port, taken_port + 2)])
        assert ports.steady_port(rng=random.Random(7)) == taken_port + 1


def test_the_range_is_read_from_the_kernel_with_linuxs_default_as_fallback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("20000\t40000\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE_FILE", range_file)
    assert ports.ephemeral_range() == (20000, 40000)
    assert ports.steady_ranges() == [range(10000, 20000), range(40001, 65536)]
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE_FILE", tmp_path / "absent")
    assert ports.ephemeral_range() == (32768, 60999)


def test_servers_that_listen_again_use_steady_ports() -> None:
    node = PrivateRabbitMQNode()
    assert all(
        outside_ephemeral_range(port) for port in (node.amqp_port, node.dist_port, node.epmd_port)
    )
    with TcpProxy("127.0.0.1", 9) as proxy:
        assert outside_ephemeral_range(proxy.port)
