"""Starting moto's server when its port was taken between `free_port` and moto's bind: it starts
again on another port instead of failing the suite (it did, once, in a loaded e2e run). And
ending it when its owner dies without stopping it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from jobhooks_tools.local.moto_server import MotoServer


def test_a_port_taken_before_moto_binds_it_is_traded_for_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = MotoServer(port=port)
        try:
            server.start()
            assert server.port != port
            with urllib.request.urlopen(f"{server.endpoint_url}/moto-api/", timeout=10) as answer:
                assert answer.status == 200
        finally:
            server.stop()


# Starts a server, says its pid and port, and waits to be killed.
OWNER = """
import sys, threading
from jobhooks_tools.local.moto_server import MotoServer
server = MotoServer().start()
print(server.pid, server.port, flush=True)
threading.Event().wait()
"""


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie left unreaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_server_whose_owner_is_killed_exits_and_frees_its_port() -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    pid, port = map(int, owner.stdout.readline().split())
    try:
        assert running(pid)
        owner.send_signal(signal.SIGKILL)  # no `stop()`, no cleanup of any kind
        owner.wait()
        deadline = time.monotonic() + 15
        while running(pid):
            assert time.monotonic() < deadline, "moto's server outlived its owner"
            time.sleep(0.1)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # free again
    finally:
        if running(pid):
            os.kill(pid, signal.SIGKILL)
