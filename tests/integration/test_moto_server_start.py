"""Starting moto's server when its port was taken between `free_port` and moto's bind: it starts
again on another port instead of failing the suite (it did, once, in a loaded e2e run)."""

from __future__ import annotations

import socket
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
