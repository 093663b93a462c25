"""The management API, called from the command line.

Where the API is and how requests are authenticated come from configuration only, never from
a guess about the URL:

    --endpoint URL      or JOBHOOKS_API_URL    the stack's ApiUrl output, or what `jobhooks dev`
                                               prints
    --auth sigv4|none   or JOBHOOKS_API_AUTH   default sigv4: the deployed API is IAM-authorized;
                                               `none` only for the local API of `jobhooks dev`
    --profile NAME, --region NAME              the AWS credentials and region SigV4 uses (else
                                               the usual AWS_PROFILE / AWS_REGION / config chain)

SigV4 signs with the region of a default `<api-id>.execute-api.<region>.amazonaws.com` host
name: an API answers only signatures for its own region, and the caller's profile may well
work in another one. `--region` (or the environment and profile) decides for a custom domain;
a `--region` that contradicts a default host name is refused before any request.

SigV4 signs with botocore's `SigV4Auth` for the service `execute-api`. Requests go out with
urllib3, without retries (a replay or a redrive must not run twice because an answer was slow)
and without following redirects. An error answer becomes a `CliError` reading `code: message`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

from jobhooks_tools.cli.exceptions import CliError

ENDPOINT_VARIABLE: Final = "JOBHOOKS_API_URL"
AUTH_VARIABLE: Final = "JOBHOOKS_API_AUTH"
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
SIGNING_SERVICE: Final = "execute-api"
_EXECUTE_API_HOST: Final = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com")
_ERROR_EXCERPT_CHARS: Final = 200


class AuthMode(StrEnum):
    SIGV4 = "sigv4"
    NONE = "none"


class ApiRequestError(CliError):
    """The API answered with an error: `status`, its stable `code` and its `message`."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}", EXIT_FAILED)
        self.status = status
        self.code = code
        self.api_message = message


def connection_arguments() -> argparse.ArgumentParser:
    """A parent parser with the connection options every API command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument(
        "--endpoint",
        metavar="URL",
        help=f"management API base URL [env {ENDPOINT_VARIABLE}]",
    )
    group.add_argument(
        "--auth",
        choices=[mode.value for mode in AuthMode],
        help=f"sigv4 (deployed API, the default) or none (jobhooks dev) [env {AUTH_VARIABLE}]",
    )
    group.add_argument("--profile", metavar="NAME", help="AWS profile for SigV4 [env AWS_PROFILE]")
    group.add_argument(
        "--region",
        metavar="NAME",
        help="AWS region for SigV4 [env AWS_REGION, AWS_DEFAULT_REGION, the profile's]",
    )
    group.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT_SECONDS,
        help=f"seconds to wait for an answer (default {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    return parent


@dataclass(frozen=True)
class ApiConnection:
    endpoint: str
    auth: AuthMode
    profile: str | None = None
    region: str | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None
    ) -> ApiConnection:
        environ = os.environ if environ is None else environ
        endpoint = (getattr(args, "endpoint", None) or environ.get(ENDPOINT_VARIABLE, "")).strip()
        if not endpoint:
            raise CliError(
                f"no API endpoint: pass --endpoint or set {ENDPOINT_VARIABLE} (the stack's "
                "ApiUrl output, or the URL `jobhooks dev` prints)",
                EXIT_USAGE,
            )
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CliError(f"the API endpoint {endpoint!r} is not an http(s) URL", EXIT_USAGE)
        auth_text = getattr(args, "auth", None) or environ.get(AUTH_VARIABLE) or AuthMode.SIGV4
        try:
            auth = AuthMode(str(auth_text).strip().lower())
        except ValueError:
            raise CliError(
                f"{AUTH_VARIABLE}={auth_text!r} is not an authentication mode; use sigv4 or none",
                EXIT_USAGE,
            ) from None
        return cls(
            endpoint=endpoint.rstrip("/"),
            auth=auth,
            profile=getattr(args, "profile", None),
            region=getattr(args, "region", None),
            timeout=float(getattr(args, "timeout", DEFAULT_TIMEOUT_SECONDS)),
        )


class ApiClient:
    """Calls the management API; JSON in, JSON out."""

    def __init__(self, connection: ApiConnection) -> None:
        import urllib3

        self.connection = connection
        self._http = urllib3.PoolManager(retries=False)
        self._signer: _SigV4Signer | None = (
            _SigV4Signer(connection) if connection.auth is AuthMode.SIGV4 else None
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ApiClient:
        return cls(ApiConnection.from_args(args))

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any = None, **query: Any) -> Any:
        return self.request("POST", path, query=query, body=body)

    def patch(self, path: str, body: Any, **query: Any) -> Any:
        return self.request("PATCH", path, query=query, body=body)

    def delete(self, path: str, **query: Any) -> Any:
        return self.request("DELETE", path, query=query)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """The answer's JSON (None for 204); raises `ApiRequestError` or `CliError`."""
        import urllib3

        url = self.connection.endpoint + path
        present = {name: value for name, value in (query or {}).items() if value is not None}
        if present:
            # %20, not +: SigV4's canonical query string encodes spaces that way.
            url += "?" + urlencode(sorted(present.items()), quote_via=quote)
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {"accept": "application/json"}
        if data is not None:
            headers["content-type"] = "application/json"
        if self._signer is not None:
            headers = self._signer.sign(method, url, data, headers)
        try:
            response = self._http.request(
                method,
                url,
                body=data,
                headers=headers,
                redirect=False,
                timeout=urllib3.Timeout(
                    connect=min(5.0, self.connection.timeout), read=self.connection.timeout
                ),
            )
        except urllib3.exceptions.HTTPError as error:
            raise CliError(
                f"cannot reach the API at {self.connection.endpoint}: {_reason(error)}",
                EXIT_FAILED,
            ) from None
        return _answer(response.status, response.data)


class _SigV4Signer:
    def __init__(self, connection: ApiConnection) -> None:
        import botocore.session
        from botocore.exceptions import BotoCoreError

        try:
            session = botocore.session.Session(profile=connection.profile)
            credentials = session.get_credentials()
            configured_region = session.get_config_variable("region")
        except BotoCoreError as error:
            raise CliError(f"AWS configuration: {error}", EXIT_USAGE) from None
        if credentials is None:
            raise CliError(
                "no AWS credentials for SigV4: set a profile (--profile, AWS_PROFILE) or "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; for the local API use --auth none",
                EXIT_USAGE,
            )
        host_region = _region_of(connection.endpoint)
        if host_region and connection.region and connection.region != host_region:
            raise CliError(
                f"--region {connection.region} contradicts the API's host name, which is in "
                f"{host_region}: API Gateway would refuse the signature; drop --region",
                EXIT_USAGE,
            )
        region = (
            host_region  # the API's own region, whatever region the profile works in
            or connection.region
            or os.environ.get("AWS_REGION")
            or configured_region  # AWS_DEFAULT_REGION, then the profile's region
        )
        if not region:
            raise CliError("no AWS region for SigV4: pass --region or set AWS_REGION", EXIT_USAGE)
        self._credentials = credentials
        self.region = region

    def sign(
        self, method: str, url: str, data: bytes | None, headers: Mapping[str, str]
    ) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, data=data, headers=dict(headers))
        # Frozen once per request: a refreshed session token must not change mid-signature.
        SigV4Auth(
            self._credentials.get_frozen_credentials(), SIGNING_SERVICE, self.region
        ).add_auth(request)
        return {name: str(value) for name, value in request.headers.items()}


def _region_of(endpoint: str) -> str | None:
    """The region in a default execute-api host name; custom domains say nothing."""
    match = _EXECUTE_API_HOST.match(urlsplit(endpoint).hostname or "")
    return match.group(1) if match else None


def _answer(status: int, raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    document: Any = None
    if text.strip():
        try:
            document = json.loads(text)
        except ValueError:
            document = None
    if 200 <= status < 300:
        if text.strip() and document is None:
            raise CliError(f"the API answered {status} with a body that is not JSON", EXIT_FAILED)
        return document
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict) and "code" in error:
        raise ApiRequestError(status, str(error["code"]), str(error.get("message", "")))
    # API Gateway's own answers (e.g. 403 for a missing or refused signature) say {"message"}.
    message = document.get("message") if isinstance(document, dict) else None
    detail = str(message) if message else " ".join(text.split())[:_ERROR_EXCERPT_CHARS]
    hint = ""
    if status == 403:
        hint = " (check --auth, the credentials' execute-api:Invoke permission and --region)"
    raise ApiRequestError(status, f"http_{status}", (detail or "no details") + hint)


def _reason(error: Exception) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or error).split(": ", 1)[-1][:_ERROR_EXCERPT_CHARS]
