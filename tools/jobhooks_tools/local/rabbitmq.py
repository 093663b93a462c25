"""Find a RabbitMQ broker, or start a private node of the installed `rabbitmq-server`.

`jobhooks dev`, the tests and the benchmarks need a real broker. When none answers at the given
URL, `find_or_start_rabbitmq` starts a private node: its own temporary directory (data, logs,
config, Erlang cookie), its own AMQP, distribution and epmd ports on loopback, and a unique node
name, so it never touches a system-wide broker and several can run side by side. `stop()` removes
every process and file it created; `restart()` keeps the data, so durable queues and persistent
messages survive it like a real broker restart.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import pika
import pika.exceptions

from jobhooks_tools.local.ports import steady_port

DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
INSTALL_COMMAND = "sudo apt-get update && sudo apt-get install -y rabbitmq-server"

# Debian's /usr/sbin/rabbitmq-server is a wrapper that cds to /var/lib/rabbitmq and redirects the
# logs to /var/log/rabbitmq; the scripts behind it honour our private RABBITMQ_* variables.
_SCRIPT_DIRS = (Path("/usr/lib/rabbitmq/bin"), Path("/usr/local/lib/rabbitmq/bin"))
# Erlang refuses a cookie file that others can read.
_COOKIE_MODE = 0o400
# Stops the node when the process that started it dies without calling stop() (SIGKILL, a CI
# timeout): a private node must never outlive its owner. Arguments: owner pid, directory, then
# the process groups to end.
_WATCHDOG = """
import os, shutil, signal, sys, time
owner, directory, groups = int(sys.argv[1]), sys.argv[2], [int(g) for g in sys.argv[3:]]
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
while alive(owner):
    time.sleep(1)
for number in (signal.SIGTERM, signal.SIGKILL):
    for group in groups:
        try:
            os.killpg(group, number)
        except OSError:
            pass
    time.sleep(10)
shutil.rmtree(directory, ignore_errors=True)
"""


class RabbitMQError(RuntimeError):
    """The broker could not be found, started, stopped or queried."""


class RabbitMQNotInstalledError(RabbitMQError):
    def __init__(self) -> None:
        super().__init__(
            "no RabbitMQ broker is reachable and rabbitmq-server is not installed; "
            f"install it with: {INSTALL_COMMAND} (or run scripts/ensure-rabbitmq.sh)"
        )


def is_reachable(url: str, timeout: float = 3.0) -> bool:
    """True when an AMQP connection (with these credentials) opens at `url`."""
    parameters = pika.URLParameters(url)
    parameters.socket_timeout = timeout
    parameters.blocked_connection_timeout = timeout
    parameters.connection_attempts = 1
    try:
        connection = pika.BlockingConnection(parameters)
    except (pika.exceptions.AMQPError, OSError):
        return False
    with contextlib.suppress(pika.exceptions.AMQPError, OSError):
        connection.close()
    return True


@dataclass(frozen=True)
class OutgoingMessage:
    routing_key: str
    body: bytes
    headers: dict[str, Any] = field(default_factory=dict)
    content_type: str | None = "application/json"
    delivery_mode: int = 2


def publish_confirmed(
    url: str,
    exchange: str,
    messages: Iterable[OutgoingMessage],
    *,
    window: int = 256,
    timeout: float = 120.0,
) -> int:
    """Publishes with publisher confirms and `mandatory`, keeping up to `window` unconfirmed
    (one confirm round trip per message would take a quorum queue's fsync each time). Returns
    the number published; raises RabbitMQError when any is nacked or returned unroutable."""
    pending = iter(messages)
    state = {"published": 0, "confirmed": 0, "done": False}
    unconfirmed: set[int] = set()
    failures: list[str] = []
    parameters = pika.URLParameters(url)
    parameters.connection_attempts = 1

    def publish_more(channel: Any) -> None:
        while not state["done"] and len(unconfirmed) < window and not failures:
            message = next(pending, None)
            if message is None:
                state["done"] = True
                break
            channel.basic_publish(
                exchange,
                message.routing_key,
                message.body,
                pika.BasicProperties(
                    content_type=message.content_type,
                    delivery_mode=message.delivery_mode,
                    headers=message.headers,
                ),
                mandatory=True,
            )
            state["published"] += 1
            unconfirmed.add(state["published"])
        if (state["done"] and not unconfirmed) or failures:
            channel.connection.close()

    def on_confirm(channel: Any, frame: Any) -> None:
        method = frame.method
        tags = (
            {tag for tag in unconfirmed if tag <= method.delivery_tag}
            if method.multiple
            else {method.delivery_tag}
        )
        if isinstance(method, pika.spec.Basic.Nack):
            failures.append(f"the broker nacked {len(tags)} message(s)")
        unconfirmed.difference_update(tags)
        publish_more(channel)

    def on_return(_channel: Any, method: Any, _properties: Any, _body: bytes) -> None:
        failures.append(f"unroutable: no queue is bound to {exchange!r} for {method.routing_key!r}")

    def on_channel(channel: Any) -> None:
        channel.add_on_return_callback(on_return)
        channel.confirm_delivery(
            functools.partial(on_confirm, channel), callback=lambda _frame: publish_more(channel)
        )

    def on_open_error(connection: Any, error: BaseException) -> None:
        failures.append(f"cannot connect: {error!r}")
        connection.ioloop.stop()

    connection = pika.SelectConnection(
        parameters,
        on_open_callback=lambda opened: opened.channel(on_open_callback=on_channel),
        on_open_error_callback=on_open_error,
        on_close_callback=lambda closed, _reason: closed.ioloop.stop(),
    )

    def on_timeout() -> None:
        failures.append(f"not every message was confirmed within {timeout}s")
        connection.close()

    timer = connection.ioloop.call_later(timeout, on_timeout)
    connection.ioloop.start()
    connection.ioloop.remove_timeout(timer)
    if failures:
        raise RabbitMQError(f"publishing to {exchange!r} failed: {'; '.join(failures[:3])}")
    if unconfirmed or not state["done"]:
        raise RabbitMQError(f"publishing to {exchange!r} stopped with messages unconfirmed")
    return state["published"]


def rabbitmq_script(name: str) -> Path | None:
    """The path of one of RabbitMQ's scripts (`rabbitmq-server`, `rabbitmqctl`, ...)."""
    for directory in _SCRIPT_DIRS:
        if (directory / name).exists():
            return directory / name
    found = shutil.which(name)
    return Path(found) if found else None


@dataclass
class QueueCounts:
    ready: int
    unacknowledged: int

    @property
    def total(self) -> int:
        return self.ready + self.unacknowledged


@dataclass
class RabbitMQBroker:
    """A reachable broker. `node` is set when this process started it (a private node)."""

    url: str
    node: PrivateRabbitMQNode | None = None

    @property
    def is_private(self) -> bool:
        return self.node is not None

    def vhost_url(self, vhost: str) -> str:
        """The same broker and credentials, another vhost."""
        return with_vhost(self.url, vhost)

    def stop(self) -> None:
        """Stops the broker when this process started it; a found broker is left alone."""
        if self.node is not None:
            self.node.stop()

    def restart(self, timeout: float = 60.0) -> None:
        self._private_node("restart").restart(timeout)

    def restart_app(self, timeout: float = 60.0) -> None:
        self._private_node("restart_app").restart_app(timeout)

    def add_vhost(self, vhost: str) -> str:
        return self._private_node("add_vhost").add_vhost(vhost)

    def queue_counts(self, queue: str, vhost: str = "/") -> QueueCounts:
        return self._private_node("queue_counts").queue_counts(queue, vhost)

    def _private_node(self, what: str) -> PrivateRabbitMQNode:
        if self.node is None:
            raise RabbitMQError(
                f"{what}() needs a private node; the broker at {self.url} was found"
            )
        return self.node

    def __enter__(self) -> RabbitMQBroker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def find_or_start_rabbitmq(url: str | None = None, timeout: float = 60.0) -> RabbitMQBroker:
    """The broker at `url` (default: the local default broker) or, failing that, a private node."""
    url = url or DEFAULT_AMQP_URL
    if is_reachable(url):
        return RabbitMQBroker(url=url)
    return start_private_rabbitmq(timeout=timeout)


def start_private_rabbitmq(timeout: float = 60.0) -> RabbitMQBroker:
    node = PrivateRabbitMQNode()
    node.start(timeout)
    return RabbitMQBroker(url=node.url, node=node)


def with_vhost(url: str, vhost: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(vhost, safe="")))


@dataclass
class PrivateRabbitMQNode:
    """One RabbitMQ node of its own: temporary directory, spare loopback ports, unique name."""

    # `restart()` listens again on these ports: outside the ephemeral range, no client
    # socket of anything else running can take one in the gap.
    amqp_port: int = field(default_factory=steady_port)
    dist_port: int = field(default_factory=steady_port)
    epmd_port: int = field(default_factory=steady_port)
    nodename: str = field(default_factory=lambda: f"jobhooks-{uuid.uuid4().hex[:12]}@localhost")
    directory: Path | None = None
    _server: subprocess.Popen[bytes] | None = None
    _epmd: subprocess.Popen[bytes] | None = None
    _watchdog: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/%2F"

    # --- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> PrivateRabbitMQNode:
        server_script = rabbitmq_script("rabbitmq-server")
        if server_script is None:
            raise RabbitMQNotInstalledError()
        if self.directory is None:
            self._prepare_directory()
        try:
            self._start_epmd()
            with self._log_file("server.stdout") as log:
                self._server = subprocess.Popen(  # noqa: S603 - the installed broker's script
                    [*self._run_as(), str(server_script)],
                    env=self._environment(),
                    cwd=self.directory,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._start_watchdog()
            self._wait_until_running(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the node and its epmd, then deletes the node's directory."""
        self._stop_watchdog()
        self._stop_server(timeout)
        self._stop_epmd()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def restart(self, timeout: float = 60.0) -> None:
        """Stops the node gracefully and starts it again on the same ports with the same data."""
        self._stop_watchdog()
        self._stop_server(timeout=30.0)
        self.start(timeout)

    def restart_app(self, timeout: float = 60.0) -> None:
        """Stops the broker application and starts it again inside the running Erlang VM
        (`rabbitmqctl stop_app`, `start_app`). A client sees what a restart shows it: its
        connections closed by the broker (`CONNECTION_FORCED`, shutdown), the port refusing
        connections, then the durable queues back with their messages (recovered from disk).
        About 1.5 s of CPU instead of 4 for `restart()`, which also boots a new VM."""
        self.rabbitmqctl("stop_app", timeout=timeout)
        self.rabbitmqctl("start_app", timeout=timeout)
        self._wait_until_running(timeout)

    # --- administration -------------------------------------------------------------------

    def rabbitmqctl(self, *arguments: str, timeout: float = 60.0) -> str:
        return self._cli("rabbitmqctl", *arguments, timeout=timeout)

    def add_vhost(self, vhost: str) -> str:
        """Creates `vhost` with full permissions for guest; returns its URL."""
        self.rabbitmqctl("add_vhost", vhost)
        self.rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        return with_vhost(self.url, vhost)

    def queue_counts(self, queue: str, vhost: str = "/") -> QueueCounts:
        output = self.rabbitmqctl(
            "list_queues",
            "-p",
            vhost,
            "--formatter",
            "json",
            "name",
            "messages_ready",
            "messages_unacknowledged",
        )
        for row in json.loads(output[output.index("[") :]):
            if row["name"] == queue:
                return QueueCounts(int(row["messages_ready"]), int(row["messages_unacknowledged"]))
        raise RabbitMQError(f"queue {queue!r} does not exist in vhost {vhost!r}")

    # --- internals ------------------------------------------------------------------------

    def _prepare_directory(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="jobhooks-rabbitmq-"))
        self.directory = directory
        for name in ("mnesia", "log", "home"):
            (directory / name).mkdir()
        (directory / "rabbitmq-env.conf").write_text("")
        (directory / "enabled_plugins").write_text("[].\n")
        (directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.amqp_port}\n"
            # CI disks are small; the default 50 MB alarm is fine, a larger one would block.
            "disk_free_limit.absolute = 50MB\n"
            "log.console = false\n"
            "log.file.level = info\n"
        )
        cookie = directory / "home" / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(16).upper())
        cookie.chmod(_COOKIE_MODE)
        owner = _broker_user()
        if owner is not None:
            for path in (directory, *directory.rglob("*")):
                os.chown(path, owner.pw_uid, owner.pw_gid)

    def _environment(self) -> dict[str, str]:
        assert self.directory is not None
        directory = self.directory
        return {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            # The CLI tools and the node find the private cookie in $HOME.
            "HOME": str(directory / "home"),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(directory / "log"),
            "RABBITMQ_CONF_ENV_FILE": str(directory / "rabbitmq-env.conf"),
            "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(directory / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(directory / "rabbitmq.pid"),
            # Keep the distribution listener on loopback like everything else.
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }

    def _run_as(self) -> list[str]:
        """The command prefix that runs a broker process as the data directory's owner."""
        owner = _broker_user()
        if owner is None:
            return []
        setpriv = shutil.which("setpriv")
        if setpriv:
            # setpriv execs in place, so the pid we signal is the broker's own script.
            return [
                setpriv,
                f"--reuid={owner.pw_uid}",
                f"--regid={owner.pw_gid}",
                "--init-groups",
                "--",
            ]
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", owner.pw_name, "--"]
        raise RabbitMQError(
            "running as root needs setpriv or runuser to start the broker as rabbitmq"
        )

    def _start_epmd(self) -> None:
        # Erlang would otherwise start a shared epmd daemon that outlives the node; this one is
        # our child on a spare port and goes away in stop().
        if self._epmd is not None and self._epmd.poll() is None:
            return
        epmd = shutil.which("epmd") or _erlang_tool("epmd")
        if epmd is None:
            raise RabbitMQError(
                "epmd (Erlang's port mapper) was not found; reinstall rabbitmq-server"
            )
        with self._log_file("epmd.log") as log:
            self._epmd = subprocess.Popen(  # noqa: S603 - Erlang's own port mapper
                [*self._run_as(), epmd, "-port", str(self.epmd_port), "-address", "127.0.0.1"],
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._epmd.poll() is not None:
                raise RabbitMQError(f"epmd exited with code {self._epmd.returncode}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.epmd_port), timeout=0.5),
            ):
                return
            time.sleep(0.05)
        raise RabbitMQError(f"epmd did not listen on port {self.epmd_port}")

    def _start_watchdog(self) -> None:
        assert self.directory is not None and self._server is not None
        groups = [str(process.pid) for process in (self._server, self._epmd) if process]
        self._watchdog = subprocess.Popen(  # noqa: S603 - a fixed script, our own pids
            [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(self.directory), *groups],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own session, so that whatever kills our process group spares it.
            start_new_session=True,
        )

    def _stop_watchdog(self) -> None:
        process, self._watchdog = self._watchdog, None
        if process is not None and process.poll() is None:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def _wait_until_running(self, timeout: float) -> None:
        # An AMQP connection that opens is the condition itself: the broker starts its
        # listeners in its last boot step, after it recovered its queues and their messages.
        # Asking `rabbitmq-diagnostics check_running` instead boots an Erlang VM per question
        # (seconds of CPU on two busy cores), which slowed every start and restart.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._server is not None
            if self._server.poll() is not None:
                code = self._server.returncode
                raise RabbitMQError(f"rabbitmq-server exited with code {code}: {self._log_tail()}")
            if is_reachable(self.url, timeout=5):
                return
            time.sleep(0.1)
        raise RabbitMQError(
            f"the private RabbitMQ node {self.nodename} was not running after {timeout:.0f}s "
            f"(its AMQP port at 127.0.0.1:{self.amqp_port} never accepted a connection): "
            f"{self._log_tail()}"
        )

    def _cli(self, tool: str, *arguments: str, timeout: float) -> str:
        script = rabbitmq_script(tool)
        if script is None:
            raise RabbitMQNotInstalledError()
        try:
            completed = subprocess.run(  # noqa: S603 - the installed broker's own CLI
                [*self._run_as(), str(script), "-q", "-n", self.nodename, *arguments],
                env=self._environment(),
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RabbitMQError(f"{tool} {' '.join(arguments)} timed out") from None
        if completed.returncode != 0:
            detail = (completed.stderr or completed.stdout).decode(errors="replace").strip()
            raise RabbitMQError(f"{tool} {' '.join(arguments)} failed: {detail[-500:]}")
        return completed.stdout.decode()

    def _stop_server(self, timeout: float) -> None:
        process, self._server = self._server, None
        if process is None:
            return
        if process.poll() is None:
            # The start script traps SIGTERM and stops the node gracefully (queues are synced).
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=timeout)
        # The Erlang VM and its helpers share the session we started; leave none behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def _stop_epmd(self) -> None:
        process, self._epmd = self._epmd, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def _log_file(self, name: str) -> BinaryIO:
        assert self.directory is not None
        log = (self.directory / "log" / name).open("ab")
        owner = _broker_user()
        if owner is not None:
            os.fchown(log.fileno(), owner.pw_uid, owner.pw_gid)
        return log

    def _log_tail(self, limit: int = 2000) -> str:
        if self.directory is None:
            return "(no log)"
        texts = []
        for path in sorted((self.directory / "log").glob("*")):
            with contextlib.suppress(OSError):
                texts.append(f"[{path.name}] {path.read_text(errors='replace')[-limit:]}")
        return "\n".join(texts)[-limit * 2 :] or "(empty log)"


def _broker_user() -> pwd.struct_passwd | None:
    """The user a root process runs the broker as (`rabbitmq`); None when not root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("rabbitmq")
    except KeyError:
        # A broker installed without Debian's package has no such user; root works too.
        return None


def _erlang_tool(name: str) -> str | None:
    for candidate in sorted(Path("/usr/lib/erlang").glob(f"erts-*/bin/{name}"), reverse=True):
        return str(candidate)
    return None
