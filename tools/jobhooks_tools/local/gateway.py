"""API Gateway's routing and authorization, played locally from template.yaml's HttpApi.

A deployed stack's HTTP API decides, before a function runs, which route a request takes, which
function answers it (ApiFunction or PortalFunction) and who may take it: IAM (SigV4) on every
route but the portal's, nobody on the portal's page and assets, the portal authorizer (a Lambda
function) on the portal's API. `LocalGateway` reads those routes and authorizers from
template.yaml (the functions' HttpApi events and the HttpApi's `Auth`), never from a second
list, and applies them to each local request:

- an IAM route: the caller is the local operator (`LOCAL_OPERATOR_ARN`), or the principal the
  server was started with (`serve_api(caller_arn=...)`: to try a grant locally); the event
  carries `requestContext.authorizer.iam` as API Gateway's does;
- a route without authorization: the event goes as it is;
- a Lambda authorizer's route: the authorizer function of the template runs on the request
  (payload 2.0, simple responses); denied: 403 `{"message":"Forbidden"}` as API Gateway answers,
  without calling the function; allowed: its context is `requestContext.authorizer.lambda`.

The local server has no SigV4: it is bound to loopback and answers local clients only
(`api_server.LocalClients`), who are the developer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobhooks_tools.local.event_source import LOCAL_ACCOUNT_ID
from jobhooks_tools.local.template import LocalTemplateError, find_template, load_template

API_RESOURCE: Final = "HttpApi"
LOCAL_OPERATOR_ARN: Final = f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:user/jobhooks-dev"
# The local stack's deployer is its developer: the local caller is its operator, as the account's
# administrators are a deployed stack's (template.yaml's OperatorPrincipals).
LOCAL_PARAMETERS: Final = {"OperatorPrincipals": LOCAL_OPERATOR_ARN}
IAM: Final = "AWS_IAM"
NONE: Final = "NONE"
GREEDY: Final = "{proxy+}"

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True, slots=True)
class Route:
    method: str  # GET, POST, ..., or ANY
    path: str  # /portal, /portal/api/{proxy+}
    authorizer: str  # AWS_IAM, NONE, or a Lambda authorizer's name
    function: str = "ApiFunction"  # the logical id of the function the route invokes

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def matches(self, method: str, path: str) -> bool:
        if self.method not in ("ANY", method.upper()):
            return False
        if self.path.endswith(GREEDY):
            prefix = self.path[: -len(GREEDY)]
            return path.startswith(prefix) and len(path) > len(prefix)
        return path == self.path

    def rank(self) -> tuple[int, int, int]:
        """API Gateway's precedence: exact paths before greedy ones, longer greedy prefixes
        first, a named method before ANY."""
        greedy = self.path.endswith(GREEDY)
        return (1 if greedy else 0, -len(self.path), 1 if self.method == "ANY" else 0)


@dataclass(frozen=True)
class Denied:
    """What API Gateway answers itself, without calling the function."""

    status: int
    body: Mapping[str, Any]


class LocalGateway:
    def __init__(
        self,
        routes: list[Route],
        authorizers: Mapping[str, Handler],
        *,
        caller_arn: str = LOCAL_OPERATOR_ARN,
        context_factory: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.routes = sorted(routes, key=Route.rank)
        self.authorizers = dict(authorizers)
        self.caller_arn = caller_arn
        self._context_factory = context_factory

    def route_for(self, method: str, path: str) -> Route | None:
        return next((route for route in self.routes if route.matches(method, path)), None)

    def authorize(self, event: dict[str, Any]) -> dict[str, Any] | Denied:
        """The event the route's function receives, or what API Gateway answers instead."""
        http = event["requestContext"]["http"]
        route = self.route_for(http["method"], http["path"])
        if route is None:
            return Denied(404, {"message": "Not Found"})
        routed = {**event, "routeKey": route.key}
        routed["requestContext"] = {**event["requestContext"], "routeKey": route.key}
        if route.path.endswith(GREEDY):
            prefix = route.path[: -len(GREEDY)]
            routed["pathParameters"] = {"proxy": http["path"][len(prefix) :]}
        else:
            routed.pop("pathParameters", None)
        if route.authorizer == NONE:
            return routed
        if route.authorizer == IAM:
            routed["requestContext"]["authorizer"] = {"iam": iam_context(self.caller_arn)}
            return routed
        authorizer = self.authorizers.get(route.authorizer)
        if authorizer is None:
            raise LocalTemplateError(f"route {route.key} names an unknown authorizer")
        verdict = authorizer(authorizer_event(routed), self._authorizer_context(routed))
        if not isinstance(verdict, Mapping) or verdict.get("isAuthorized") is not True:
            return Denied(403, {"message": "Forbidden"})
        routed["requestContext"]["authorizer"] = {"lambda": dict(verdict.get("context") or {})}
        return routed

    def _authorizer_context(self, event: dict[str, Any]) -> Any:
        return self._context_factory(event) if self._context_factory else None


def iam_context(caller_arn: str) -> dict[str, Any]:
    """`requestContext.authorizer.iam` of a SigV4-signed request, as API Gateway writes it."""
    account = caller_arn.split(":")[4] if caller_arn.count(":") >= 5 else LOCAL_ACCOUNT_ID
    return {
        "accessKey": "ASIALOCALDEVELOPER00",
        "accountId": account,
        "callerId": "AIDALOCALDEVELOPER00",
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": caller_arn,
        "userId": "AIDALOCALDEVELOPER00",
    }


def authorizer_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """A REQUEST authorizer's payload 2.0 event for the request `event`."""
    context = event["requestContext"]
    api, stage = context.get("apiId", "local"), context.get("stage", "$default")
    http = context["http"]
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": (
            f"arn:aws:execute-api:local:{LOCAL_ACCOUNT_ID}:{api}/{stage}/"
            f"{http['method']}{http['path']}"
        ),
        "identitySource": [],
        "routeKey": event.get("routeKey"),
        "rawPath": event.get("rawPath"),
        "rawQueryString": event.get("rawQueryString", ""),
        "cookies": list(event.get("cookies") or []),
        "headers": dict(event.get("headers") or {}),
        "queryStringParameters": dict(event.get("queryStringParameters") or {}),
        "requestContext": dict(context),
        "pathParameters": dict(event.get("pathParameters") or {}),
    }


def read_routes(template_path: str | Path | None = None) -> tuple[list[Route], dict[str, str]]:
    """Every function's HttpApi routes (the management API's, the portal's) and the Lambda
    authorizers' functions (name -> logical id)."""
    template = load_template(find_template(template_path))
    resources = template["Resources"]
    api = (resources.get(API_RESOURCE) or {}).get("Properties") or {}
    auth = api.get("Auth") or {}
    default = str(auth.get("DefaultAuthorizer") or NONE)
    authorizers: dict[str, str] = {}
    for name, spec in (auth.get("Authorizers") or {}).items():
        target = (spec or {}).get("FunctionArn")
        if not (isinstance(target, dict) and "Fn::GetAtt" in target):
            raise LocalTemplateError(f"authorizer {name}: FunctionArn must be !GetAtt F.Arn")
        attribute = target["Fn::GetAtt"]
        authorizers[name] = str(attribute[0] if isinstance(attribute, list) else attribute)
    routes = []
    for logical_id, resource in resources.items():
        if (resource or {}).get("Type") != "AWS::Serverless::Function":
            continue
        function = resource.get("Properties") or {}
        for event in (function.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            spec = event.get("Properties") or {}
            chosen = str(((spec.get("Auth") or {}).get("Authorizer")) or default)
            if chosen not in (IAM, NONE) and chosen not in authorizers:
                raise LocalTemplateError(f"{spec.get('Path')}: unknown authorizer {chosen}")
            routes.append(Route(str(spec["Method"]).upper(), str(spec["Path"]), chosen, logical_id))
    if not routes:
        raise LocalTemplateError(f"{API_RESOURCE} has no route")
    return routes, authorizers
