"""The management API and the portal on localhost for `jobhooks dev` and tests: API Gateway,
played locally.

    server = serve_api()                 # 127.0.0.1 on a free port
    print(server.url)                    # JOBHOOKS_API_URL for the CLI, with JOBHOOKS_API_AUTH=none
    ...
    server.shutdown()

Each HTTP request becomes the event an HTTP API (payload format 2.0) hands a Lambda function,
the handler of the function its route names runs in this process (`functions/api/app.py` for
/v1, `functions/portal/app.py` for /portal, found through template.yaml's ApiFunction and
PortalFunction), and its answer is written back as API Gateway would. Routes and their
authorization come from template.yaml too (`jobhooks_tools.local.gateway`): the portal's API
passes the portal authorizer function, run here as API Gateway runs it; every IAM route is
called as the local operator, since there is no SigV4 here: bind only to loopback. Nor may a
web page of another origin drive it (`LocalClients`): a request
must name this server's own Host (127.0.0.1:PORT or localhost:PORT), which defeats DNS
rebinding, and a browser request from any other origin is refused, so no page can POST to it
cross-site (`/test` would reach the developer's LAN). Requests are handled one at a time, as by
one Lambda instance: the Event Handler keeps the current request on its resolver, which is not
thread-safe. The handler reads its configuration from this process's environment
(`JOBHOOKS_*`, `AWS_ENDPOINT_URL`), exactly as the function reads its own.
"""

from __future__ import annotations

import base64
import email.message
import functools
import http.server
import importlib.util
import ipaddress
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from types import ModuleType
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit

from jobhooks.management.exceptions import ApiError

from jobhooks_tools.local.analytics import ensure_local_backend
from jobhooks_tools.local.event_source import LOCAL_ACCOUNT_ID, LambdaContext
from jobhooks_tools.local.gateway import (
    LOCAL_OPERATOR_ARN,
    Denied,
    LocalGateway,
    read_routes,
)
from jobhooks_tools.local.template import LocalTemplateError, find_template, load_template

API_FUNCTION: Final = "ApiFunction"
PORTAL_FUNCTION: Final = "PortalFunction"
# API Gateway's HTTP API refuses larger payloads (10 MB); no management request comes close.
MAX_BODY_BYTES: Final = 1_048_576
DEFAULT_TIMEOUT_SECONDS: Final = 15.0
ROUTE_KEY: Final = "ANY /{proxy+}"

ApiHandler = Callable[[dict[str, Any], Any], Any]

FORBIDDEN_HOST: Final = "forbidden_host"
FORBIDDEN_ORIGIN: Final = "forbidden_origin"
# What browsers send as Sec-Fetch-Site for a request a page of this server made, or the user
# made by typing the URL; anything else ("cross-site", "same-site") came from another page.
_OWN_FETCH_SITES: Final = ("same-origin", "none")


class LocalClients:
    """Who the local API answers: requests naming its own Host, from no other web origin.

    A browser names the page's host in `Host` even when DNS rebinding made that name resolve
    to 127.0.0.1, so only the server's own names pass: 127.0.0.1:PORT and localhost:PORT (and
    its address when bound to another loopback address). Browsers send `Origin` with every
    cross-origin request, and `Sec-Fetch-Site` with every request, a no-cors GET included; the
    CLI and curl send neither.
    """

    def __init__(self, bound_host: str, port: int) -> None:
        names = ["127.0.0.1", "localhost"]
        if _is_loopback(bound_host) and bound_host not in names:
            names.append(bound_host)
        self.port = port
        self.hosts = frozenset(f"{name}:{port}" for name in names)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    def refusal(self, headers: email.message.Message) -> ApiError | None:
        """The 403 for a request from anything but a local client; None when it may pass."""
        hosts = headers.get_all("Host") or []
        if len(hosts) != 1 or _authority(hosts[0], self.port) not in self.hosts:
            return self._refuse(
                FORBIDDEN_HOST,
                f"the request must name Host 127.0.0.1:{self.port} or localhost:{self.port}; "
                "a web page reaching it through another name is refused",
            )
        origins = headers.get_all("Origin") or []
        if any(_authority_url(origin, self.port) not in self.origins for origin in origins):
            return self._refuse(FORBIDDEN_ORIGIN, self._other_origin())
        sites = headers.get_all("Sec-Fetch-Site") or []
        if any(site.strip().lower() not in _OWN_FETCH_SITES for site in sites):
            return self._refuse(FORBIDDEN_ORIGIN, self._other_origin())
        return None

    def _other_origin(self) -> str:
        return (
            "requests a web page of another origin makes are refused; call it from the "
            "jobhooks CLI, curl or a script"
        )

    def _refuse(self, code: str, reason: str) -> ApiError:
        return ApiError(
            HTTPStatus.FORBIDDEN,
            code,
            f"the local API (jobhooks dev) only answers local clients: {reason}",
        )


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _authority(host: str, port: int) -> str:
    """A Host value as `name:port`, the name lowercased (80, HTTP's default, may be left out)."""
    text = host.strip().lower()
    return f"{text}:80" if port == 80 and text and ":" not in text else text


def _authority_url(origin: str, port: int) -> str:
    """An Origin (`scheme://host[:port]`) in the spelling of `LocalClients.origins`."""
    scheme, separator, host = origin.strip().partition("://")
    if not separator:
        return origin
    return f"{scheme.lower()}://{_authority(host, port)}"


class ApiServer:
    """A running local API; `url` is its base URL (no trailing slash)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler_of: Callable[[str], ApiHandler],
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        access_log: Callable[[str], None] | None = None,
        gateway: LocalGateway | None = None,
    ) -> None:
        # The handler of the function a route names (by logical id).
        self._handler_of = handler_of
        self.gateway = gateway
        self._timeout = timeout_seconds
        self._access_log = access_log
        self._invoke_lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer((host, port), self._request_handler())
        self._server.daemon_threads = True
        self.clients = LocalClients(host, int(self._server.server_address[1]))
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="jobhooks-local-api", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        address = self._server.server_address
        host, port = str(address[0]), int(address[1])
        host_text = f"[{host}]" if ":" in host else host
        return f"http://{host_text}:{port}"

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ApiServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # -- one request -----------------------------------------------------------------------

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """Route and authorize one API Gateway event as the template says, then run the
        handler on it; the answer in payload 2.0 form."""
        with self._invoke_lock:
            function = API_FUNCTION
            if self.gateway is not None:
                http = event["requestContext"]["http"]
                route = self.gateway.route_for(http["method"], http["path"])
                function = route.function if route is not None else API_FUNCTION
                authorized = self.gateway.authorize(event)
                if isinstance(authorized, Denied):
                    return {
                        "statusCode": authorized.status,
                        "headers": {"content-type": "application/json"},
                        "body": json.dumps(dict(authorized.body)),
                    }
                event = authorized
            handler = self._handler_of(function)
            answer = handler(event, self._context("jobhooks-local-api", event))
        return normalize_answer(answer)

    def _context(self, name: str, event: dict[str, Any]) -> LambdaContext:
        return LambdaContext(
            function_name=name,
            memory_limit_in_mb=256,
            invoked_function_arn=f"arn:aws:lambda:local:{LOCAL_ACCOUNT_ID}:function:{name}",
            aws_request_id=event["requestContext"]["requestId"],
            deadline=time.monotonic() + self._timeout,
        )

    def _request_handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                refusal = server.clients.refusal(self.headers)
                if refusal is not None:
                    # Refused unread: the connection closes, so its body is never taken for
                    # the next request.
                    self.log_message("refused (%s)", refusal.code)
                    self._write(refusal.status, refusal.body(), close=True)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    self._write(413, {"message": "Request Entity Too Large"}, close=True)
                    return
                body = self.rfile.read(length) if length else b""
                event = api_gateway_event(
                    self.command,
                    self.path,
                    [(name, value) for name, value in self.headers.items()],
                    body,
                    source_ip=self.client_address[0],
                    host=self.headers.get("Host", ""),
                )
                try:
                    answer = server.invoke(event)
                except Exception:
                    # What API Gateway answers when the function itself fails.
                    self._write(500, {"message": "Internal Server Error"})
                    raise
                self._write_answer(answer)

            def _write(
                self, status: int, document: Mapping[str, Any], *, close: bool = False
            ) -> None:
                self._write_answer(
                    {
                        "statusCode": status,
                        "headers": {"content-type": "application/json"},
                        "body": json.dumps(document),
                    },
                    close=close,
                )

            def _write_answer(self, answer: dict[str, Any], *, close: bool = False) -> None:
                raw = answer.get("body") or ""
                payload = (
                    base64.b64decode(raw)
                    if answer.get("isBase64Encoded")
                    else str(raw).encode("utf-8")
                )
                self.send_response(int(answer.get("statusCode", 200)))
                for name, value in (answer.get("headers") or {}).items():
                    if name.lower() not in ("content-length", "connection"):
                        self.send_header(name, str(value))
                for cookie in answer.get("cookies") or []:
                    self.send_header("Set-Cookie", str(cookie))
                self.send_header("Content-Length", str(len(payload)))
                if close:
                    self.send_header("Connection", "close")  # and http.server closes it
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

            def log_message(self, format: str, *args: Any) -> None:
                if server._access_log is not None:
                    server._access_log(format % args)

        return Handler


def serve_api(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    handler: ApiHandler | None = None,
    access_log: Callable[[str], None] | None = None,
    caller_arn: str = LOCAL_OPERATOR_ARN,
    template_path: str | Path | None = None,
) -> ApiServer:
    """Serve the management API and the portal on `host:port` (0: a free port) until
    `.shutdown()`.

    `handler` defaults to the function each route names in template.yaml (ApiFunction,
    PortalFunction), loaded from its CodeUri on its first request. Requests
    are routed and authorized as template.yaml's HttpApi says; IAM routes are called as
    `caller_arn` (the local operator, or a principal a grant binds). The analytics routes (and
    the portal's chart) answer with DuckDB over `JOBHOOKS_ANALYTICS_DIR`: the local back end is
    registered here unless the process registered one (`jobhooks_tools.local.analytics`).
    """
    ensure_local_backend()
    return ApiServer(
        host,
        port,
        (lambda _: handler)
        if handler is not None
        else _kept_warm(functools.partial(load_function_handler, template_path=template_path)),
        access_log=access_log,
        gateway=load_gateway(template_path, caller_arn=caller_arn),
    )


def _kept_warm(load: Callable[[str], ApiHandler]) -> Callable[[str], ApiHandler]:
    """Each function's handler found on its first request and kept after, as a warm Lambda
    instance keeps its module (the module itself is imported once per process): finding it
    reads template.yaml, tens of milliseconds of CPU that every request paid."""
    warm: dict[str, ApiHandler] = {}

    def handler_of(logical_id: str) -> ApiHandler:
        found = warm.get(logical_id)
        if found is None:
            found = warm[logical_id] = load(logical_id)
        return found

    return handler_of


class WarmAuthorizer:
    """A Lambda authorizer's handler, imported on the first request that needs it (as Lambda
    would cold-start it) and kept warm after: finding it again reads template.yaml, a second
    of CPU per request."""

    def __init__(self, name: str, logical_id: str, template_path: str | Path | None) -> None:
        self.name = name
        self._logical_id = logical_id
        self._template_path = template_path
        self._found: tuple[ModuleType, str] | None = None

    @property
    def module(self) -> ModuleType:
        """The function's module, imported now if no request has needed it yet."""
        return self._function()[0]

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        return _handler_of(self._function())(event, context)

    def _function(self) -> tuple[ModuleType, str]:
        if self._found is None:
            self._found = _function(
                self._logical_id, self._template_path, module_name=f"authorizer_{self.name}"
            )
        return self._found


def load_gateway(
    template_path: str | Path | None = None, *, caller_arn: str = LOCAL_OPERATOR_ARN
) -> LocalGateway:
    """template.yaml's routes, with each Lambda authorizer's handler loaded from its CodeUri."""
    routes, authorizer_functions = read_routes(template_path)

    authorizers = {
        name: WarmAuthorizer(name, logical_id, template_path)
        for name, logical_id in authorizer_functions.items()
    }

    def context(event: dict[str, Any]) -> LambdaContext:
        return LambdaContext(
            function_name="jobhooks-local-authorizer",
            memory_limit_in_mb=256,
            invoked_function_arn=(
                f"arn:aws:lambda:local:{LOCAL_ACCOUNT_ID}:function:jobhooks-local-authorizer"
            ),
            aws_request_id=event["requestContext"]["requestId"],
            deadline=time.monotonic() + 5,
        )

    return LocalGateway(routes, authorizers, caller_arn=caller_arn, context_factory=context)


_MODULE_NAMES: Final = {API_FUNCTION: "api_function", PORTAL_FUNCTION: "portal_function"}


def load_function_handler(logical_id: str, template_path: str | Path | None = None) -> ApiHandler:
    """An HTTP function's handler, imported from the CodeUri and Handler template.yaml gives."""
    return _handler_of(_http_function(logical_id, template_path))


def load_api_handler(template_path: str | Path | None = None) -> ApiHandler:
    """The management API function's handler."""
    return load_function_handler(API_FUNCTION, template_path)


def load_api_module(template_path: str | Path | None = None) -> ModuleType:
    """The API function's module (`app`, `openapi_json`, ...), imported once per process."""
    return _http_function(API_FUNCTION, template_path)[0]


def load_portal_module(template_path: str | Path | None = None) -> ModuleType:
    """The portal function's module (`app`, `openapi_json`, ...), imported once per process."""
    return _http_function(PORTAL_FUNCTION, template_path)[0]


def openapi_document(template_path: str | Path | None = None) -> dict[str, Any]:
    """docs/openapi.json: the management API's document with the portal function's paths and
    schemas joined in (both are served by one HTTP API, under one set of security schemes)."""
    document: dict[str, Any] = json.loads(load_api_module(template_path).openapi_json())
    portal: dict[str, Any] = json.loads(load_portal_module(template_path).openapi_json())
    # In the Event Handler's own order, as one resolver of both would write them: paths with
    # parameters first, then the others; schemas by name.
    paths = [*document.get("paths", {}).items(), *portal.get("paths", {}).items()]
    document["paths"] = dict(sorted(paths, key=lambda item: "{" not in item[0]))
    components = document.setdefault("components", {})
    for kind, entries in (portal.get("components") or {}).items():
        own = components.get(kind, {})
        joined = {**own, **{name: entry for name, entry in entries.items() if name not in own}}
        components[kind] = dict(sorted(joined.items())) if kind == "schemas" else joined
    return document


def _http_function(logical_id: str, template_path: str | Path | None) -> tuple[ModuleType, str]:
    name = _MODULE_NAMES.get(logical_id, logical_id.lower())
    return _function(logical_id, template_path, module_name=name)


def _handler_of(found: tuple[ModuleType, str]) -> ApiHandler:
    module, function_name = found
    handler = getattr(module, function_name, None)
    if not callable(handler):
        raise LocalTemplateError(f"{module.__file__}: {function_name!r} is not a function")
    return handler  # type: ignore[no-any-return]


def _function(
    logical_id: str, template_path: str | Path | None, *, module_name: str
) -> tuple[ModuleType, str]:
    template = find_template(template_path)
    resource = load_template(template)["Resources"].get(logical_id) or {}
    properties = resource.get("Properties") or {}
    code_uri, handler_name = properties.get("CodeUri"), properties.get("Handler")
    if not isinstance(code_uri, str) or not isinstance(handler_name, str):
        raise LocalTemplateError(f"{template}: {logical_id} needs a CodeUri and a Handler")
    module, _, function_name = handler_name.rpartition(".")
    return _import_file(template.parent / code_uri / f"{module}.py", module_name), function_name


def _import_file(path: Path, module_name: str) -> ModuleType:
    name = f"jobhooks_local_{module_name}"
    # One module per process: a second server shares the first one's handler and its caches.
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LocalTemplateError(f"cannot load the API function from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def api_gateway_event(
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    *,
    source_ip: str = "127.0.0.1",
    host: str = "",
) -> dict[str, Any]:
    """The event an HTTP API (payload format 2.0) sends a function for one request."""
    parts = urlsplit(target)
    raw_path = parts.path or "/"
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
            continue
        # API Gateway joins repeated headers with commas.
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    now = datetime.now(UTC)
    text_body: str | None
    try:
        text_body, encoded = (body.decode("utf-8"), False) if body else (None, False)
    except UnicodeDecodeError:
        text_body, encoded = base64.b64encode(body).decode("ascii"), True
    # API Gateway tells the function how the client reached it.
    joined.setdefault("x-forwarded-proto", "http")
    joined.setdefault("x-forwarded-for", source_ip)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": ROUTE_KEY,
        "rawPath": raw_path,
        "rawQueryString": parts.query,
        "headers": joined,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT_ID,
            "apiId": "local",
            "domainName": host.split(":")[0] or "localhost",
            "domainPrefix": "local",
            "http": {
                "method": method.upper(),
                "path": unquote(raw_path),
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": ROUTE_KEY,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "pathParameters": {"proxy": raw_path.lstrip("/")},
        "isBase64Encoded": encoded,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if text_body is not None:
        event["body"] = text_body
    return event


def normalize_answer(answer: Any) -> dict[str, Any]:
    """A handler's return value as API Gateway reads payload 2.0 answers."""
    if isinstance(answer, dict) and "statusCode" in answer:
        return answer
    # Anything else is a 200 with the value as JSON (API Gateway's "simple response").
    return {
        "statusCode": 200,
        "headers": {"content-type": "application/json"},
        "body": answer if isinstance(answer, str) else json.dumps(answer),
    }
