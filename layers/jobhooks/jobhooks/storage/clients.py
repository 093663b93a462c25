"""AWS clients: one botocore configuration for every function, each client made on first use.

The retry and timeout decision, for every DynamoDB, SQS, KMS and Secrets Manager call of the
functions (docs/architecture.md, "AWS calls"):

- botocore's `standard` retry mode, `MAX_ATTEMPTS` = 3 (the call and two retries): it retries
  throttling, 5xx and connection errors with jittered exponential backoff (at most 1 s, then
  2 s, for throttling; milliseconds otherwise);
- `CONNECT_TIMEOUT_SECONDS` = 1 and `READ_TIMEOUT_SECONDS` = 2: these services answer in
  milliseconds, so a call silent that long is stuck, and a fresh attempt on a new connection is
  the cure. No call of the functions long-polls (every ReceiveMessage has WaitTimeSeconds 0).

So one call gives up after at most 3 x (1 + 2) s plus 3 s of backoff: 12 s. The one exception
is the portal authorizer, which API Gateway waits for before every portal request (and gives
at most 10 s): it makes `AUTHORIZER_MAX_ATTEMPTS` = 2, so a stuck table refuses the request
within about 7 s instead of holding it. That fits the
tightest budget, the management API's 15 s function timeout (itself under API Gateway's 30 s
integration limit): a stuck dependency becomes a 502 answer, not a function timeout. On the
event paths SQS is the outer retry: a record whose call still fails comes back after the
queue's visibility timeout (six function timeouts), and the claim's lease or the attempt count
keep that safe, so botocore only has to absorb blips.

Clients are made on their first call (`aws_client`), not when a store is built: importing a
function stays cheap, and the first invocation that needs a client pays for it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from botocore.config import Config

MAX_ATTEMPTS: Final = 3
AUTHORIZER_MAX_ATTEMPTS: Final = 2
CONNECT_TIMEOUT_SECONDS: Final = 1
READ_TIMEOUT_SECONDS: Final = 2


def aws_config(
    *, max_pool_connections: int | None = None, max_attempts: int = MAX_ATTEMPTS
) -> Config:
    """The botocore `Config` of every client; `max_pool_connections` for threads that share one
    client (botocore keeps 10 connections by default)."""
    from botocore.config import Config

    options: dict[str, Any] = {
        # `total_max_attempts` counts the first call; the retries dict's `max_attempts` counts
        # retries only (botocore's legacy meaning), which made 3 four calls.
        "retries": {"mode": "standard", "total_max_attempts": max_attempts},
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "read_timeout": READ_TIMEOUT_SECONDS,
    }
    if max_pool_connections is not None:
        options["max_pool_connections"] = max_pool_connections
    return Config(**options)


class LazyClient:
    """A boto3 client that is made when it is first used, then used as it is; thread-safe."""

    def __init__(
        self,
        service_name: str,
        *,
        session: Any = None,
        max_pool_connections: int | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self.service_name = service_name
        self._session = session
        self._max_pool_connections = max_pool_connections
        self._max_attempts = max_attempts
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this object lacks: the client's operations and attributes.
        return getattr(self.client, name)

    @property
    def client(self) -> Any:
        """The boto3 client, made now if it was not yet."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make()
        return self._client

    def _make(self) -> Any:
        # boto3's default session when none was given, as it is at first use: AWS_ENDPOINT_URL,
        # the region and credentials are read then, as a client made at import would read them.
        if self._session is None:
            import boto3

            make = boto3.client
        else:
            make = self._session.client
        config = aws_config(
            max_pool_connections=self._max_pool_connections, max_attempts=self._max_attempts
        )
        return make(self.service_name, config=config)

    def __repr__(self) -> str:
        made = "made" if self._client is not None else "not made yet"
        return f"LazyClient({self.service_name!r}, {made})"


def aws_client(
    service_name: str,
    *,
    session: Any = None,
    max_pool_connections: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> Any:
    """A client of `service_name` (from `session`, default boto3's default session) with
    `aws_config()`, made on its first call."""
    return LazyClient(
        service_name,
        session=session,
        max_pool_connections=max_pool_connections,
        max_attempts=max_attempts,
    )


class SecretsManagerReader:
    """Powertools' `SecretsProvider` (its cache included) over one Secrets Manager client, made
    on the first read: importing Powertools' parameters utility and making the client are paid
    by the first invocation, not by the cold import of the function."""

    def __init__(self, session: Any = None) -> None:
        self._session = session
        self._provider: Any = None
        self._lock = threading.Lock()

    def get(self, name: str, **options: Any) -> Any:
        return self._secrets_provider().get(name, **options)

    def _secrets_provider(self) -> Any:
        if self._provider is None:
            with self._lock:
                if self._provider is None:
                    from aws_lambda_powertools.utilities.parameters import SecretsProvider

                    client = aws_client("secretsmanager", session=self._session)
                    self._provider = SecretsProvider(boto3_client=client)
        return self._provider


def aws_error_code(error: BaseException) -> str:
    """The AWS error code of a botocore `ClientError` (`Unknown` for anything else)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", "Unknown"))
    return "Unknown"
