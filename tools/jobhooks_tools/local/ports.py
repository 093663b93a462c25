"""Loopback ports for the local servers (RabbitMQ nodes, moto's server, proxies).

`free_port()` is the kernel's pick: right for a server that binds once and keeps its port.

`steady_port()` is for a server that closes its listener and listens again on the same port:
a broker restart, an outage proxy refusing then accepting. The kernel gives ports of its
ephemeral range (`net.ipv4.ip_local_port_range`) to every outgoing connection on the machine,
so in the gap a client socket of anything else running can take such a port, and the server
cannot come back (`eaddrinuse`: a CI run lost a broker restart this way). A port outside that
range is only ever taken by a server that asks for it by number.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DEFAULT_EPHEMERAL_RANGE = (32768, 60999)  # Linux's default
_LOWEST_STEADY_PORT = 10000  # above the well-known and most registered service ports
_TRIES = 200


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, chosen by the kernel (from its ephemeral range)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports, inclusive."""
    try:
        low, high = (int(part) for part in _EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL_RANGE
    return low, high


def steady_ranges() -> list[range]:
    """The unprivileged ports outside the ephemeral range, as ranges to draw from."""
    low, high = ephemeral_range()
    ranges = [range(_LOWEST_STEADY_PORT, low), range(high + 1, 65536)]
    return [candidates for candidates in ranges if len(candidates) > 0]


def steady_port(host: str = "127.0.0.1", rng: random.Random | None = None) -> int:
    """A free port outside the ephemeral range, for a listener that must come back on it.

    Drawn at random so that parallel test workers rarely try the same one; a port that does
    not bind (in use, or still held by a closing connection) is skipped."""
    rng = rng or random.SystemRandom()
    ranges = steady_ranges()
    if not ranges:  # an ephemeral range covering every port: nothing steadier exists
        return free_port(host)
    weights = [len(candidates) for candidates in ranges]
    for _ in range(_TRIES):
        candidates = rng.choices(ranges, weights=weights)[0]
        port = rng.choice(candidates)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        return port
    raise OSError(f"no free port outside the ephemeral range after {_TRIES} tries")
