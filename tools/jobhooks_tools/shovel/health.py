"""A small HTTP endpoint: `/healthz` (JSON, 200 or 503) and `/metrics` (Prometheus text)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


class HealthServer:
    def __init__(
        self, check: HealthCheck, render_metrics: Callable[[], str], host: str, port: int
    ) -> None:
        self._check = check
        self._render_metrics = render_metrics
        self.host = host
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> HealthServer:
        server = ThreadingHTTPServer((self.host, self.port), self._handler_class())
        server.daemon_threads = True
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="health", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        check, render_metrics = self._check, self._render_metrics

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    healthy, report = check()
                    self._reply(200 if healthy else 503, "application/json", json.dumps(report))
                elif path == "/metrics":
                    self._reply(200, PROMETHEUS_CONTENT_TYPE, render_metrics())
                else:
                    self._reply(404, "text/plain", "not found: try /healthz or /metrics\n")

            def _reply(self, status: int, content_type: str, text: str) -> None:
                body = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                # Scrapes every few seconds would drown the shovel's own log.
                return

        return Handler
