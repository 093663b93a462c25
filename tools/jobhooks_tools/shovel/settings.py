"""The shovel's configuration: one pydantic model, read once from flags and environment.

Precedence: command-line flag, then environment variable, then default. Every problem is
reported with the flag and the variable that set it and what to do, before anything connects.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import pika
import pika.exceptions
from jobhooks.inbound.envelope import SQS_MAX_MESSAGE_BYTES
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from jobhooks_tools.shovel.exceptions import ShovelSettingsError

DEFAULT_EXCHANGE = "fetcher.job.events"
DEFAULT_QUEUE = "jobhooks.shovel"
DEFAULT_BINDINGS = ("job.completed", "job.failed")
# v1.4.x producers publish job.<status>.<source>; `*` matches exactly one word in a topic key.
LEGACY_BINDING = "job.*.*"
DEFAULT_HEALTH_PORT = 8081
# RabbitMQ 4's own default for quorum queues: far above what a healthy message needs (one
# delivery, a few more after connection losses), low enough to end a poison loop in seconds.
DEFAULT_DELIVERY_LIMIT = 20
# SendMessageBatch takes at most 10 entries.
SQS_MAX_BATCH_ENTRIES = 10

_SQS_HOST = re.compile(r"^sqs[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$")


class QueueType(StrEnum):
    QUORUM = "quorum"
    CLASSIC = "classic"


class ShovelSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    amqp_url: SecretStr
    vhosts: tuple[str, ...] = ()
    queue_url: str
    region: str | None = None
    sqs_endpoint_url: str | None = None
    exchange: Annotated[str, Field(min_length=1, max_length=255)] = DEFAULT_EXCHANGE
    queue: Annotated[str, Field(min_length=1, max_length=255)] = DEFAULT_QUEUE
    queue_type: QueueType = QueueType.QUORUM
    parking_queue: Annotated[str, Field(max_length=255)] = ""
    delivery_limit: Annotated[int, Field(ge=1, le=10_000)] = DEFAULT_DELIVERY_LIMIT
    bindings: tuple[str, ...] = DEFAULT_BINDINGS
    legacy_bindings: bool = False
    prefetch: Annotated[int, Field(ge=1, le=65535)] = 200
    # A burst (jobs finishing together) fills its batches of 10 within 100 ms (at 20 ms, about 4 a
    # call in bench/cost.py's burst): fewer SendMessageBatch calls for at most 0.1 s of latency.
    batch_linger_ms: Annotated[int, Field(ge=0, le=10_000)] = 100
    senders: Annotated[int, Field(ge=1, le=64)] = 4
    max_message_bytes: Annotated[int, Field(ge=1024, le=SQS_MAX_MESSAGE_BYTES)] = (
        SQS_MAX_MESSAGE_BYTES
    )
    heartbeat_seconds: Annotated[int, Field(ge=0, le=3600)] = 30
    retry_max_delay_seconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    shutdown_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 8.0
    health_port: Annotated[int, Field(ge=0, le=65535)] | None = DEFAULT_HEALTH_PORT
    health_host: str = "127.0.0.1"
    log_level: str = "INFO"

    @field_validator("amqp_url")
    @classmethod
    def _amqp_url_is_usable(cls, value: SecretStr) -> SecretStr:
        url = value.get_secret_value()
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
            raise ValueError("must look like amqp://user:password@host:5672/vhost (or amqps://...)")
        try:
            pika.URLParameters(url)
        except (ValueError, pika.exceptions.AMQPError) as error:
            # pika's message may quote the URL, password included: keep only the error type.
            raise ValueError(
                f"is not a valid AMQP URL ({error.__class__.__name__}); check its query options"
            ) from None
        return value

    @field_validator("queue_url")
    @classmethod
    def _queue_url_is_an_sqs_url(cls, value: str) -> str:
        parts = urllib.parse.urlsplit(value)
        segments = [segment for segment in parts.path.split("/") if segment]
        if parts.scheme not in ("http", "https") or not parts.hostname or len(segments) != 2:
            raise ValueError(
                "must be the ingest queue's URL, https://sqs.<region>.amazonaws.com/<account>/"
                "<name> (the stack output IngestQueueUrl)"
            )
        return value

    @field_validator("vhosts", "bindings")
    @classmethod
    def _no_empty_or_repeated_items(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item for item in value):
            raise ValueError("must not contain empty items")
        if len(set(value)) != len(value):
            raise ValueError("must not repeat an item")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        level = value.upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
        return level

    @model_validator(mode="after")
    def _fill_derived_values(self) -> ShovelSettings:
        # The model is frozen; derived defaults are filled once, here.
        if not self.vhosts:
            vhost = pika.URLParameters(self.amqp_url.get_secret_value()).virtual_host
            object.__setattr__(self, "vhosts", (vhost,))
        if not self.parking_queue:
            object.__setattr__(self, "parking_queue", f"{self.queue}.parked")
        if self.parking_queue == self.queue:
            raise ValueError("the parking queue must differ from the shovel's queue")
        if self.region is None:
            region = region_of_queue_url(self.queue_url)
            if region is None:
                raise ValueError(
                    "the AWS region is unknown: set --region (or AWS_REGION); it cannot be "
                    "read from this queue URL"
                )
            object.__setattr__(self, "region", region)
        if not self.bindings and not self.legacy_bindings:
            raise ValueError(
                "no binding: keep the default job.completed,job.failed or enable legacy bindings"
            )
        return self

    @property
    def routing_keys(self) -> tuple[str, ...]:
        """Every binding of the shovel's queue to the exchange."""
        if self.legacy_bindings and LEGACY_BINDING not in self.bindings:
            return (*self.bindings, LEGACY_BINDING)
        return self.bindings

    @property
    def batch_linger_seconds(self) -> float:
        return self.batch_linger_ms / 1000

    def amqp_url_for(self, vhost: str) -> str:
        """The AMQP URL with its vhost replaced (password included: never log it)."""
        parts = urllib.parse.urlsplit(self.amqp_url.get_secret_value())
        return urllib.parse.urlunsplit(
            parts._replace(path="/" + urllib.parse.quote(vhost, safe=""))
        )

    def redacted_amqp_url(self) -> str:
        """The AMQP URL without its password, for logs."""
        parts = urllib.parse.urlsplit(self.amqp_url.get_secret_value())
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        user = f"{parts.username}@" if parts.username else ""
        return urllib.parse.urlunsplit(parts._replace(netloc=user + host, query=""))


def region_of_queue_url(queue_url: str) -> str | None:
    host = urllib.parse.urlsplit(queue_url).hostname or ""
    match = _SQS_HOST.match(host)
    return match.group("region") if match else None


# --- loading from flags and environment -------------------------------------------------


@dataclass(frozen=True)
class SettingSource:
    """Where one setting comes from: its flag, its environment variables, how to read them."""

    flag: str
    env: tuple[str, ...]
    kind: str = "text"  # text | list | bool | port
    help: str = ""
    secret: bool = False


SOURCES: dict[str, SettingSource] = {
    "amqp_url": SettingSource(
        "--amqp-url",
        ("JOBHOOKS_AMQP_URL",),
        help="broker URL, amqp://user:password@host:5672/vhost (required)",
        secret=True,
    ),
    "queue_url": SettingSource(
        "--queue-url",
        ("JOBHOOKS_INGEST_QUEUE_URL",),
        help="URL of the SQS ingest queue (required)",
    ),
    "vhosts": SettingSource(
        "--vhost",
        ("JOBHOOKS_AMQP_VHOSTS",),
        kind="list",
        help="vhost to consume; repeat for several (env: comma-separated); default: the URL's",
    ),
    "region": SettingSource(
        "--region",
        ("JOBHOOKS_SQS_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"),
        help="AWS region of the queue; default: read from the queue URL",
    ),
    "sqs_endpoint_url": SettingSource(
        "--sqs-endpoint-url",
        ("JOBHOOKS_SQS_ENDPOINT_URL",),
        help="SQS endpoint override (local emulators); boto3 also honours AWS_ENDPOINT_URL",
    ),
    "exchange": SettingSource(
        "--exchange",
        ("JOBHOOKS_AMQP_EXCHANGE",),
        help=f"topic exchange the producer publishes to (default {DEFAULT_EXCHANGE})",
    ),
    "queue": SettingSource(
        "--amqp-queue",
        ("JOBHOOKS_SHOVEL_QUEUE",),
        help=f"the shovel's durable queue (default {DEFAULT_QUEUE}); instances share it",
    ),
    "queue_type": SettingSource(
        "--queue-type",
        ("JOBHOOKS_SHOVEL_QUEUE_TYPE",),
        help="quorum (default) or classic, for the shovel's queue and the parking queue",
    ),
    "parking_queue": SettingSource(
        "--parking-queue",
        ("JOBHOOKS_SHOVEL_PARKING_QUEUE",),
        help="queue for messages that cannot be forwarded (default <queue>.parked)",
    ),
    "delivery_limit": SettingSource(
        "--delivery-limit",
        ("JOBHOOKS_SHOVEL_DELIVERY_LIMIT",),
        help=f"redeliveries after which a message goes to the parking queue instead "
        f"(default {DEFAULT_DELIVERY_LIMIT})",
    ),
    "bindings": SettingSource(
        "--binding",
        ("JOBHOOKS_SHOVEL_BINDINGS",),
        kind="list",
        help="routing key to bind; repeat for several (default job.completed, job.failed)",
    ),
    "legacy_bindings": SettingSource(
        "--legacy-bindings",
        ("JOBHOOKS_SHOVEL_LEGACY_BINDINGS",),
        kind="bool",
        help=f"also bind {LEGACY_BINDING} for v1.4.x producers (default off)",
    ),
    "prefetch": SettingSource(
        "--prefetch",
        ("JOBHOOKS_SHOVEL_PREFETCH",),
        help="unacknowledged deliveries per vhost (default 200)",
    ),
    "batch_linger_ms": SettingSource(
        "--batch-linger-ms",
        ("JOBHOOKS_SHOVEL_BATCH_LINGER_MS",),
        help="how long a batch waits to fill up to 10 messages (default 100)",
    ),
    "senders": SettingSource(
        "--senders",
        ("JOBHOOKS_SHOVEL_SENDERS",),
        help="concurrent SendMessageBatch calls (default 4)",
    ),
    "max_message_bytes": SettingSource(
        "--max-message-bytes",
        ("JOBHOOKS_SHOVEL_MAX_MESSAGE_BYTES",),
        help="largest SQS message; larger ones are parked (default and maximum 1048576)",
    ),
    "heartbeat_seconds": SettingSource(
        "--heartbeat",
        ("JOBHOOKS_SHOVEL_HEARTBEAT",),
        help="AMQP heartbeat in seconds, 0 to disable (default 30)",
    ),
    "retry_max_delay_seconds": SettingSource(
        "--retry-max-delay",
        ("JOBHOOKS_SHOVEL_RETRY_MAX_DELAY",),
        help="longest backoff in seconds between reconnects and SQS retries (default 10)",
    ),
    "shutdown_timeout_seconds": SettingSource(
        "--shutdown-timeout",
        ("JOBHOOKS_SHOVEL_SHUTDOWN_TIMEOUT",),
        help="seconds to flush in-flight messages on SIGTERM before exiting (default 8)",
    ),
    "health_port": SettingSource(
        "--health-port",
        ("JOBHOOKS_SHOVEL_HEALTH_PORT",),
        kind="port",
        help=f"port of /healthz and /metrics; 0 picks a free one, off disables "
        f"(default {DEFAULT_HEALTH_PORT})",
    ),
    "health_host": SettingSource(
        "--health-host",
        ("JOBHOOKS_SHOVEL_HEALTH_HOST",),
        help="address of the health endpoint (default 127.0.0.1; 0.0.0.0 in containers)",
    ),
    "log_level": SettingSource(
        "--log-level",
        ("JOBHOOKS_SHOVEL_LOG_LEVEL",),
        help="DEBUG, INFO (default), WARNING or ERROR",
    ),
}

_REQUIRED = {
    "amqp_url": "the broker's URL, amqp://user:password@host:5672/vhost",
    "queue_url": "the SQS ingest queue's URL (the stack output IngestQueueUrl)",
}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def load_settings(
    flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> ShovelSettings:
    """The settings from flag values (None = not given) and the environment.

    Raises ShovelSettingsError listing every problem, each naming the flag or variable that
    set the bad value and saying what it must be.
    """
    flags = flags or {}
    environ = environ if environ is not None else {}
    raw: dict[str, Any] = {}
    origins: dict[str, str] = {}
    problems: list[str] = []
    for name, source in SOURCES.items():
        value = flags.get(name)
        origin = source.flag
        if value is None:
            for variable in source.env:
                if environ.get(variable, "") != "":
                    value, origin = environ[variable], variable
                    break
        if value is None:
            continue
        origins[name] = origin
        try:
            raw[name] = _parse(value, source)
        except ValueError as error:
            problems.append(f"{origin} {error}")
    for name, what in _REQUIRED.items():
        if name not in raw and name not in origins:
            source = SOURCES[name]
            problems.append(f"{source.flag} (or {source.env[0]}) is required: set it to {what}")
    if problems:
        raise ShovelSettingsError(problems)
    try:
        return ShovelSettings.model_validate(raw)
    except ValidationError as error:
        raise ShovelSettingsError(_describe(error, origins)) from None


def _parse(value: Any, source: SettingSource) -> Any:
    if source.kind == "list":
        items = value if isinstance(value, list | tuple) else str(value).split(",")
        return tuple(str(item).strip() for item in items)
    if source.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(f"must be true or false, got {value!r}")
    if source.kind == "port":
        text = str(value).strip().lower()
        return None if text in ("off", "none") else text
    return value


def _describe(error: ValidationError, origins: Mapping[str, str]) -> list[str]:
    problems = []
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else ""
        message = _requirement(item)
        source = SOURCES.get(name)
        if source is None:
            problems.append(message)
            continue
        where = origins.get(name, source.flag)
        if source.secret:
            problems.append(f"{where} {message}")
        else:
            problems.append(f"{where} {message}, got {item.get('input')!r}")
    return problems


def _requirement(item: Any) -> str:
    """pydantic's message turned into what the value must be."""
    context = item.get("ctx") or {}
    match item["type"]:
        case "int_parsing" | "int_type" | "int_from_float":
            return "must be a whole number"
        case "float_parsing" | "float_type":
            return "must be a number"
        case "greater_than_equal":
            return f"must be at least {context.get('ge')}"
        case "greater_than":
            return f"must be more than {context.get('gt')}"
        case "less_than_equal":
            return f"must be at most {context.get('le')}"
        case "string_too_short":
            return "must not be empty"
        case "string_too_long":
            return f"must be at most {context.get('max_length')} characters"
        case "enum":
            return f"must be one of {context.get('expected')}"
    return str(item["msg"]).removeprefix("Value error, ")
