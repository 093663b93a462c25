"""moto's server as a child process: the local stand-in for SQS, DynamoDB, KMS and Secrets Manager.

It runs through `moto_main`, which answers each DynamoDB table's requests one at a time so that
its conditional writes are atomic, as DynamoDB's are, and can take a snapshot of its whole state
and put it back (`snapshot`, `restore`): the tests provision template.yaml once and restore it
before each test. The server exits when the process that started it dies without stopping it.

A child process rather than moto's in-process thread: the handlers under test then pay real HTTP
round trips, and the emulator can be stopped to play an AWS outage.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from jobhooks_tools.local.moto_main import OWNER_PID
from jobhooks_tools.local.ports import free_port

LOCAL_REGION = "us-east-1"
# moto accepts any credentials; these make boto3 sign requests without touching ~/.aws.
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


_START_TRIES = 3


class _ExitedWhileStarting(RuntimeError):
    """moto's server exited before it answered (its port taken meanwhile, most often)."""


def local_aws_environment(endpoint_url: str) -> dict[str, str]:
    """The environment variables that point boto3 at the local emulator."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        "AWS_REGION": LOCAL_REGION,
        **LOCAL_CREDENTIALS,
    }


@dataclass
class MotoServer:
    host: str = "127.0.0.1"
    port: int = field(default_factory=free_port)
    # The server to run: `moto_main` (DynamoDB's writes atomic as on AWS), or moto's own
    # `moto.server` for a bench's baseline.
    module: str = "jobhooks_tools.local.moto_main"
    _process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the server is not started")
        return self._process.pid

    def start(self, timeout: float = 30.0) -> MotoServer:
        # This interpreter's moto, through `module`.
        if importlib.util.find_spec("moto") is None:
            raise RuntimeError(
                "moto's server was not found: install the dev extras (pip install 'jobhooks[dev]')"
            )
        # `free_port` frees the port it found before moto binds it: on a machine running many
        # suites, another process may take it first, and moto exits at once ("Port N is in
        # use", code 1). A server that exits while starting is started again on another port.
        for _ in range(_START_TRIES - 1):
            try:
                return self._start_once(timeout)
            except _ExitedWhileStarting:
                self.port = free_port()
        return self._start_once(timeout)

    def _start_once(self, timeout: float) -> MotoServer:
        self._process = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed module
            [
                sys.executable,
                "-m",
                self.module,
                "-H",
                self.host,
                "-p",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **LOCAL_CREDENTIALS, OWNER_PID: str(os.getpid())},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise _ExitedWhileStarting(
                    f"moto_server exited with code {self._process.returncode}"
                )
            try:
                with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=1):  # noqa: S310
                    return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto_server did not answer on {self.endpoint_url} within {timeout}s")

    def reset(self) -> None:
        """Every service empty, as moto starts."""
        self._post("/moto-api/reset")

    def snapshot(self, name: str) -> None:
        """Keep moto's whole state as it is now, under `name` (replacing an older one)."""
        self._post(f"/moto-api/jobhooks/snapshot/{urllib.parse.quote(name, safe='')}")

    def restore(self, name: str) -> bool:
        """Put moto's whole state back as snapshot `name` found it: every resource, attribute
        and item as it was, whatever was changed, deleted or created since. False when the
        server has no such snapshot (it was never taken, or the server was started again)."""
        try:
            self._post(f"/moto-api/jobhooks/restore/{urllib.parse.quote(name, safe='')}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return False
            raise
        return True

    def _post(self, path: str) -> None:
        request = urllib.request.Request(f"{self.endpoint_url}{path}", method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - our own loopback URL
            pass

    def stop(self) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
