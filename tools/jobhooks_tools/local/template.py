"""template.yaml's queues, tables, key and secret, created on a local AWS emulator.

`jobhooks dev` and the integration tests need the same SQS queues (visibility, retention,
redrive to the same DLQ after the same number of receives), DynamoDB tables (keys, GSIs, TTL),
KMS key and Fetcher keys secret as a deployed stack. They are read from template.yaml, never
written a second time here: this module only knows how each resource *type* maps to API calls.

    resources = provision(endpoint_url="http://127.0.0.1:5000")
    resources.queue_url("IngestQueue")
    os.environ.update(resources.environment())      # the JOBHOOKS_* settings of the functions

Local names follow the template with the stack name replaced by `prefix` (`jobhooks-IngestQueue`,
`jobhooks/fetcher-keys`); a resource the template leaves unnamed is called `<prefix>-<LogicalId>`.
Provisioning is idempotent: a second call finds and reuses what the first one created.

The analytics table's AWS resources (`EMBEDDED_LOCALLY`: the Firehose stream, the buckets, the
Glue table, the Athena workgroup and its saved queries) are not created: on one machine the
local file sink and DuckDB stand in for them (`jobhooks_tools.local.analytics`). A function variable
that refers to one of them is left out of the function's local environment, so the function
falls back to the embedded default (`JOBHOOKS_ANALYTICS_DIR`, which `jobhooks dev` sets).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import boto3
import yaml
from botocore.exceptions import ClientError

from jobhooks_tools.local.iam import guard as iam_guard
from jobhooks_tools.local.iam.policy import Policy, PolicyError
from jobhooks_tools.local.iam.principals import Principal, role_documents, shovel_principal
from jobhooks_tools.local.moto_server import LOCAL_REGION

TEMPLATE_ENV_VAR: Final = "JOBHOOKS_TEMPLATE"
DEFAULT_PREFIX: Final = "jobhooks"
FETCHER_KEYS_SECRET: Final = "FetcherKeysSecret"  # noqa: S105 - a logical id

QUEUE_TYPE: Final = "AWS::SQS::Queue"
TABLE_TYPE: Final = "AWS::DynamoDB::Table"
KEY_TYPE: Final = "AWS::KMS::Key"
ALIAS_TYPE: Final = "AWS::KMS::Alias"
SECRET_TYPE: Final = "AWS::SecretsManager::Secret"  # noqa: S105 - a resource type
TOPIC_TYPE: Final = "AWS::SNS::Topic"
PROVISIONED_TYPES: Final = (QUEUE_TYPE, TABLE_TYPE, KEY_TYPE, ALIAS_TYPE, SECRET_TYPE, TOPIC_TYPE)
EMBEDDED_LOCALLY: Final = (
    "AWS::KinesisFirehose::DeliveryStream",
    "AWS::S3::Bucket",
    "AWS::Glue::Database",
    "AWS::Glue::Table",
    "AWS::Athena::WorkGroup",
    "AWS::Athena::NamedQuery",
)
FUNCTION_TYPES: Final = ("AWS::Serverless::Function",)
ROLE_TYPE: Final = "AWS::IAM::Role"
# How a resource that is not created locally is named in a role's policy: the property holding
# its name, and its ARN (what `!GetAtt X.Arn` gives on AWS) built from that name.
_POLICY_NAMES: Final[dict[str, tuple[tuple[str, ...], str | None]]] = {
    "AWS::Logs::LogGroup": (
        ("LogGroupName",),
        "arn:{partition}:logs:{region}:{account}:log-group:{name}:*",
    ),
    "AWS::Logs::LogStream": (("LogStreamName",), None),
    "AWS::KinesisFirehose::DeliveryStream": (
        ("DeliveryStreamName",),
        "arn:{partition}:firehose:{region}:{account}:deliverystream/{name}",
    ),
    "AWS::S3::Bucket": (("BucketName",), "arn:{partition}:s3:::{name}"),
    "AWS::Glue::Database": (("DatabaseInput", "Name"), None),
    "AWS::Glue::Table": (("TableInput", "Name"), None),
    "AWS::Athena::WorkGroup": (
        ("Name",),
        "arn:{partition}:athena:{region}:{account}:workgroup/{name}",
    ),
    "AWS::SNS::Topic": (("TopicName",), None),
}

# CloudFormation queue properties that are SQS queue attributes of the same name.
_QUEUE_ATTRIBUTES: Final = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "RedriveAllowPolicy",
    "RedrivePolicy",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
)
# SQS refuses to change these on an existing queue.
_QUEUE_CREATE_ONLY: Final = frozenset({"FifoQueue"})
# SAM's defaults when neither the function nor Globals set a value.
_SAM_DEFAULT_TIMEOUT: Final = 3
_SAM_DEFAULT_MEMORY: Final = 128
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")
# EventBridge's rate expressions, as a Schedule event of a function gives them.
_RATE: Final = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_RATE_UNITS: Final = {"minute": 60, "hour": 3600, "day": 86400}
_NO_VALUE: Final = object()


class LocalTemplateError(Exception):
    """template.yaml cannot be read or reproduced locally; the message says which part and why."""


# ------------------------------------------------------------------------------ reading


try:
    # libyaml's parser: a tenth of the pure-Python one's CPU. Every test that provisions the
    # template, and every local API server, reads it (about 0.2 s each in Python).
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]


class _TemplateLoader(_SafeLoader):
    """YAML with CloudFormation's short tags (`!Ref X`, `!GetAtt A.B`, `!Sub …`) as plain dicts."""


def _construct_intrinsic(loader: _SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:  # pragma: no cover - PyYAML has no other node kinds
        raise LocalTemplateError(f"unexpected YAML node for !{suffix}")
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        resource, _, attribute = value.partition(".")
        return {"Fn::GetAtt": [resource, attribute]}
    return {f"Fn::{suffix}": value}


_TemplateLoader.add_multi_constructor("!", _construct_intrinsic)


def find_template(path: str | os.PathLike[str] | None = None) -> Path:
    """The template to read: `path`, else $JOBHOOKS_TEMPLATE, else the checkout this package
    lives in, else the nearest template.yaml from the working directory upwards."""
    if path is not None:
        candidates = [Path(path)]
    elif os.environ.get(TEMPLATE_ENV_VAR):
        candidates = [Path(os.environ[TEMPLATE_ENV_VAR])]
    else:
        # tools/jobhooks_tools/local/template.py -> the repository root
        checkout = Path(__file__).resolve().parents[3] / "template.yaml"
        cwd = Path.cwd()
        candidates = [checkout, *(directory / "template.yaml" for directory in (cwd, *cwd.parents))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise LocalTemplateError(
        f"template.yaml not found (looked at {', '.join(str(c) for c in candidates[:3])}…): "
        f"run from the jobhooks checkout or set {TEMPLATE_ENV_VAR}"
    )


def load_template(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """template.yaml as a dict, intrinsic functions in their long form (`{"Fn::GetAtt": [...]}`)."""
    template_path = find_template(path)
    try:
        document = yaml.load(template_path.read_text(encoding="utf-8"), Loader=_TemplateLoader)  # noqa: S506 - a (C)SafeLoader subclass
    except yaml.YAMLError as error:
        raise LocalTemplateError(f"{template_path} is not valid YAML: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise LocalTemplateError(f"{template_path} has no Resources section")
    return document


# ------------------------------------------------------------------------------ the result


@dataclass(frozen=True)
class LocalFunction:
    """A function of the template as the local event-source poller needs it."""

    logical_id: str
    code_uri: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    # Every environment variable of the function (Globals merged in), resolved.
    variables: Mapping[str, str]
    # The SQS event source, if any: the queue's logical id and the mapping's settings.
    queue: str | None = None
    batch_size: int | None = None
    maximum_concurrency: int | None = None
    batching_window_seconds: int = 0
    # A Schedule event's rate, in seconds (the local stack invokes the function that often).
    schedule_seconds: int | None = None


@dataclass(frozen=True)
class LocalResources:
    """What `provision` created, by the template's logical ids."""

    prefix: str
    region: str
    endpoint_url: str
    # What `!Ref` gives on AWS: queue URL, table name, key id, secret ARN, alias name.
    refs: Mapping[str, str]
    arns: Mapping[str, str]
    # Queue name, table name, secret name, key alias.
    names: Mapping[str, str]
    types: Mapping[str, str]
    functions: Mapping[str, LocalFunction] = field(default_factory=lambda: MappingProxyType({}))
    # Who calls AWS locally (each function as its template role, the shovel) and under which
    # policy: what the IAM guard (jobhooks_tools.local.iam) evaluates their calls against.
    principals: Mapping[str, Principal] = field(default_factory=lambda: MappingProxyType({}))
    # Resources that are not created locally (the Firehose stream, the buckets, the log groups),
    # by the name the roles' grants give them here: a test that stands one in must use it.
    policy_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def _of_type(self, logical_id: str, resource_type: str) -> str:
        if self.types.get(logical_id) != resource_type:
            known = sorted(k for k, t in self.types.items() if t == resource_type)
            raise KeyError(
                f"{logical_id} is not a {resource_type} of the template (known: {known})"
            )
        return self.refs[logical_id]

    def queue_url(self, logical_id: str) -> str:
        return self._of_type(logical_id, QUEUE_TYPE)

    def table_name(self, logical_id: str) -> str:
        return self._of_type(logical_id, TABLE_TYPE)

    def environment(self, function: str | None = None) -> dict[str, str]:
        """The JOBHOOKS_* variables of one function, or of all functions together."""
        if function is not None:
            if function not in self.functions:
                raise KeyError(f"{function} is not a function of the template")
            selected = [self.functions[function]]
        else:
            selected = list(self.functions.values())
        merged: dict[str, str] = {}
        for spec in selected:
            for name, value in spec.variables.items():
                if not name.startswith("JOBHOOKS_"):
                    continue
                if merged.setdefault(name, value) != value:
                    raise LocalTemplateError(
                        f"{name} differs between functions; ask for one function's environment"
                    )
        return merged


# ------------------------------------------------------------------------------ provisioning


def provision(
    template: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    prefix: str = DEFAULT_PREFIX,
    parameters: Mapping[str, str | int] | None = None,
    secret_values: Mapping[str, str] | None = None,
    fetcher_keys: Sequence[str] | None = None,
    endpoint_url: str | None = None,
    service_endpoints: Mapping[str, str] | None = None,
    region: str | None = None,
    session: boto3.session.Session | None = None,
    checkout: str | os.PathLike[str] | None = None,
) -> LocalResources:
    """Create (or find) the template's queues, tables, KMS key and secrets on a local endpoint.

    `template`: a path or an already loaded template (default: `find_template()`).
    `prefix` stands for the stack name. `parameters` override the template's defaults.
    `secret_values` sets secrets' values by logical id; `fetcher_keys` is the shorthand for the
    Fetcher keys secret (64-hex keys, current first). A secret that already exists keeps its
    value unless one is given here.
    `endpoint_url` defaults to $AWS_ENDPOINT_URL; one of them is required, so this never creates
    anything in a real account by accident (a deployed stack comes from `sam deploy`).
    `service_endpoints`: the services another local endpoint serves (botocore's service names,
    e.g. {"dynamodb": url}, as `AWS_ENDPOINT_URL_DYNAMODB` says to the functions).
    `checkout`: where the functions' CodeUri and deploy/ are (default: the template's folder,
    or the checkout's for a template passed as a dict).
    """
    document = dict(template) if isinstance(template, Mapping) else load_template(template)
    if checkout is None:
        checkout = (
            find_template().parent
            if isinstance(template, Mapping)
            else find_template(template).parent
        )
    endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        raise LocalTemplateError(
            "no local endpoint: pass endpoint_url or set AWS_ENDPOINT_URL "
            "(a stack on AWS comes from sam deploy)"
        )
    region_name = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    values = dict(secret_values or {})
    if fetcher_keys is not None:
        values[FETCHER_KEYS_SECRET] = ",".join(fetcher_keys)
    provisioner = _Provisioner(
        document,
        prefix=prefix,
        parameters=parameters or {},
        secret_values=values,
        session=session or boto3.session.Session(),
        endpoint_url=endpoint,
        service_endpoints=service_endpoints or {},
        region=region_name or LOCAL_REGION,
        checkout=Path(checkout),
    )
    resources = provisioner.run()
    use_roles(resources, other_endpoint_urls=(service_endpoints or {}).values())
    return resources


def use_roles(resources: LocalResources, *, other_endpoint_urls: Iterable[str] = ()) -> None:
    """From now on the functions of this process call AWS as the principals of `resources`
    (the IAM guard, jobhooks_tools.local.iam). `provision` does it; a stack put back as it was
    provisioned (the tests restore a snapshot of moto instead of provisioning again) does it
    again, since another stack's principals may have been used since. `other_endpoint_urls`:
    the local endpoints of services served by another process (`service_endpoints`)."""
    iam_guard.use(
        resources.principals.values(),
        endpoint_url=resources.endpoint_url,
        other_endpoint_urls=list(other_endpoint_urls),
        secret_arns={
            resources.names[k]: arn
            for k, arn in resources.refs.items()
            if resources.types[k] == SECRET_TYPE
        },
        key_aliases={
            resources.names[k]: resources.refs[k]
            for k in resources.refs
            if resources.types[k] == KEY_TYPE
        },
    )


@dataclass
class _Created:
    resource_type: str
    ref: str
    name: str
    attributes: dict[str, str]


class _Provisioner:
    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        prefix: str,
        parameters: Mapping[str, str | int],
        secret_values: Mapping[str, str],
        session: boto3.session.Session,
        endpoint_url: str,
        region: str,
        checkout: Path,
        service_endpoints: Mapping[str, str] | None = None,
    ) -> None:
        self._resources: Mapping[str, Any] = template["Resources"]
        self._conditions: Mapping[str, Any] = template.get("Conditions") or {}
        self._globals: Mapping[str, Any] = (template.get("Globals") or {}).get("Function") or {}
        self._prefix = prefix
        self._region = region
        self._endpoint_url = endpoint_url
        self._service_endpoints = dict(service_endpoints or {})
        self._session = session
        self._clients: dict[str, Any] = {}
        self._parameters = self._parameter_values(template.get("Parameters") or {}, parameters)
        self._secret_values = dict(secret_values)
        unknown = sorted(set(self._secret_values) - set(self._resources))
        if unknown:
            raise LocalTemplateError(f"secret values for unknown resources: {unknown}")
        self._condition_values: dict[str, bool] = {}
        self._created: dict[str, _Created] = {}
        self._in_progress: list[str] = []
        self._account_id: str | None = None
        # While resolving role policies: resources that are not created locally resolve to the
        # name and ARN they would have, so every statement keeps its resource.
        self._policy_mode = False
        self._policy_names: dict[str, str] = {}
        self._policy_arns: dict[str, str] = {}
        self._checkout = checkout

    # -- entry point --------------------------------------------------------------------

    def run(self) -> LocalResources:
        for logical_id, resource in self._resources.items():
            if resource.get("Type") in PROVISIONED_TYPES and self._included(logical_id):
                self._ensure(logical_id)
        functions = {
            logical_id: self._function(logical_id, resource)
            for logical_id, resource in self._resources.items()
            if resource.get("Type") in FUNCTION_TYPES and self._included(logical_id)
        }
        principals = self._principals(functions)
        created = self._created
        return LocalResources(
            prefix=self._prefix,
            region=self._region,
            endpoint_url=self._endpoint_url,
            refs=MappingProxyType({k: c.ref for k, c in created.items()}),
            arns=MappingProxyType(
                {k: c.attributes["Arn"] for k, c in created.items() if "Arn" in c.attributes}
            ),
            names=MappingProxyType({k: c.name for k, c in created.items()}),
            types=MappingProxyType({k: c.resource_type for k, c in created.items()}),
            functions=MappingProxyType(functions),
            principals=MappingProxyType(principals),
            policy_names=MappingProxyType(dict(self._policy_names)),
        )

    # -- IAM ----------------------------------------------------------------------------

    def _principals(self, functions: Mapping[str, LocalFunction]) -> dict[str, Principal]:
        """Each function as its Role, and the shovel as deploy/ documents it."""
        account, region = str(self._pseudo_parameter("AWS::AccountId")), self._region
        found: dict[str, Principal] = {}
        for logical_id, function in functions.items():
            properties = self._resources[logical_id].get("Properties") or {}
            role_reference = properties.get("Role")
            if not (isinstance(role_reference, dict) and "Fn::GetAtt" in role_reference):
                raise LocalTemplateError(
                    f"{logical_id}: the local IAM guard needs Role: !GetAtt <Role>.Arn "
                    "(a role of the template)"
                )
            target = role_reference["Fn::GetAtt"]
            role = str(target.split(".", 1)[0] if isinstance(target, str) else target[0])
            if self._resources.get(role, {}).get("Type") != ROLE_TYPE:
                raise LocalTemplateError(f"{logical_id}: {role} is not an {ROLE_TYPE}")
            self._policy_mode = True
            try:
                documents, _aws_managed = role_documents(role, self._resources, self._resolve)
            finally:
                self._policy_mode = False
            # AWS managed policies (_aws_managed) only add grants: leaving them out fails closed.
            try:
                policy = Policy.parse(role, documents, self._resource_label)
            except PolicyError as error:
                raise LocalTemplateError(f"{role}: {error}") from error
            code = (str((self._checkout / function.code_uri).resolve()),)
            found[logical_id] = Principal(
                name=logical_id,
                policy_source=role,
                arn=f"arn:aws:sts::{account}:assumed-role/{self._prefix}-{role}/{logical_id}",
                account=account,
                region=region,
                policy=policy,
                code=code,
            )
        if "IngestQueue" in self._created:
            shovel = shovel_principal(
                self._checkout,
                {k: c.attributes["Arn"] for k, c in self._created.items() if "Arn" in c.attributes},
                account,
                region,
            )
            if shovel is not None:
                found[shovel.name] = shovel
        return found

    def _resource_label(self, arn: str) -> str:
        """A resource ARN as the grants report names it: by the logical id whose ARN it starts
        with (`ClaimsTable/index/unmatched`), the same in every local stack."""
        known_arns = {
            logical_id: created.attributes.get("Arn")
            or (created.ref if created.ref.startswith("arn:") else "")
            for logical_id, created in self._created.items()
        }
        known_arns.update(self._policy_arns)
        for logical_id, known in sorted(known_arns.items(), key=lambda item: -len(item[1])):
            if known and arn.startswith(known):
                return logical_id + arn[len(known) :]
        return arn

    def _policy_reference(self, logical_id: str, attribute: str | None) -> Any:
        """A resource that is not created locally, as a role's policy names it: `!Ref` gives its
        name, `!GetAtt X.Arn` the ARN it would have. Unknown kinds get a placeholder that no
        request matches (their grants then allow nothing locally)."""
        resource = self._resources[logical_id]
        spec = _POLICY_NAMES.get(str(resource.get("Type")))
        name = f"{self._prefix}-{logical_id}"
        if spec is not None:
            value: Any = resource.get("Properties") or {}
            for key in spec[0]:
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None:
                name = _as_string(self._resolve(value))
        self._policy_names[logical_id] = name
        if attribute is None:
            return name
        if attribute == "Arn" and spec is not None and spec[1] is not None:
            arn = spec[1].format(
                partition="aws",
                region=self._region,
                account=self._pseudo_parameter("AWS::AccountId"),
                name=name,
            )
            self._policy_arns[logical_id] = arn.removesuffix(":*")
            return arn
        return f"unresolved:{logical_id}.{attribute}"

    # -- parameters and conditions ------------------------------------------------------

    @staticmethod
    def _parameter_values(
        declared: Mapping[str, Any], overrides: Mapping[str, str | int]
    ) -> dict[str, str]:
        unknown = sorted(set(overrides) - set(declared))
        if unknown:
            raise LocalTemplateError(f"unknown template parameters: {unknown}")
        values: dict[str, str] = {}
        for name, spec in declared.items():
            if name in overrides:
                values[name] = _as_string(overrides[name])
            elif "Default" in spec:
                values[name] = _as_string(spec["Default"])
            else:
                raise LocalTemplateError(f"template parameter {name} has no default: pass it")
        return values

    def _included(self, logical_id: str) -> bool:
        condition = self._resources[logical_id].get("Condition")
        return condition is None or self._condition(condition)

    def _condition(self, name: str) -> bool:
        if name not in self._condition_values:
            if name not in self._conditions:
                raise LocalTemplateError(f"unknown condition {name}")
            self._condition_values[name] = bool(self._resolve(self._conditions[name]))
        return self._condition_values[name]

    # -- intrinsic functions ------------------------------------------------------------

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [r for r in (self._resolve(item) for item in value) if r is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            handler = self._intrinsics.get(key)
            if handler is not None:
                return handler(self, argument)
        resolved = {k: self._resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _ref(self, name: str) -> Any:
        pseudo = self._pseudo_parameter(name)
        if pseudo is not None:
            return pseudo
        if name in self._parameters:
            return self._parameters[name]
        if self._policy_mode and self._not_created_locally(name):
            return self._policy_reference(name, None)
        if self._embedded_locally(name):
            return _NO_VALUE
        return self._ensure(name).ref

    def _get_att(self, argument: Any) -> Any:
        if isinstance(argument, str):
            argument = argument.split(".", 1)
        logical_id, attribute = self._resolve(argument[0]), self._resolve(argument[1])
        if self._policy_mode and self._not_created_locally(logical_id):
            return self._policy_reference(logical_id, attribute)
        if self._embedded_locally(logical_id):
            return _NO_VALUE
        created = self._ensure(logical_id)
        if attribute not in created.attributes:
            raise LocalTemplateError(f"!GetAtt {logical_id}.{attribute} is not available locally")
        return created.attributes[attribute]

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = argument[0], {k: self._resolve(v) for k, v in argument[1].items()}
        else:
            text, variables = argument, {}

        def replace(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression.startswith("!"):
                return "${" + expression[1:] + "}"
            if expression in variables:
                return _as_string(variables[expression])
            if "." in expression and expression.split(".", 1)[0] in self._resources:
                value = self._get_att(expression)
            else:
                value = self._ref(expression)
            if value is _NO_VALUE:
                raise LocalTemplateError(
                    f"!Sub {text!r} refers to {expression}, which has no local counterpart"
                )
            return _as_string(value)

        return _SUB_VARIABLE.sub(replace, text)

    def _if(self, argument: Any) -> Any:
        condition, when_true, when_false = argument
        return self._resolve(when_true if self._condition(condition) else when_false)

    def _equals(self, argument: Any) -> bool:
        left, right = (self._resolve(item) for item in argument)
        return _as_string(left) == _as_string(right)

    def _join(self, argument: Any) -> str:
        delimiter, items = argument
        return str(delimiter).join(_as_string(item) for item in self._resolve(items))

    def _select(self, argument: Any) -> Any:
        index, items = argument
        return self._resolve(items)[int(self._resolve(index))]

    def _split(self, argument: Any) -> list[str]:
        delimiter, text = argument
        return _as_string(self._resolve(text)).split(delimiter)

    _intrinsics: Final[dict[str, Callable[[_Provisioner, Any], Any]]] = {
        "Ref": _ref,
        "Fn::GetAtt": _get_att,
        "Fn::Sub": _sub,
        "Fn::If": _if,
        "Fn::Equals": _equals,
        "Fn::Not": lambda self, arg: not self._resolve(arg[0]),
        "Fn::And": lambda self, arg: all(self._resolve(item) for item in arg),
        "Fn::Or": lambda self, arg: any(self._resolve(item) for item in arg),
        "Condition": lambda self, arg: self._condition(arg),
        "Fn::Join": _join,
        "Fn::Select": _select,
        "Fn::Split": _split,
    }

    def _pseudo_parameter(self, name: str) -> Any:
        if name == "AWS::StackName":
            return self._prefix
        if name == "AWS::Region":
            return self._region
        if name == "AWS::AccountId":
            if self._account_id is None:
                self._account_id = str(self._client("sts").get_caller_identity()["Account"])
            return self._account_id
        if name == "AWS::Partition":
            return "aws"
        if name == "AWS::URLSuffix":
            return "amazonaws.com"
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name.startswith("AWS::"):
            raise LocalTemplateError(f"pseudo parameter {name} is not available locally")
        return None

    # -- resources ----------------------------------------------------------------------

    def _embedded_locally(self, logical_id: str) -> bool:
        resource = self._resources.get(logical_id)
        return resource is not None and resource.get("Type") in EMBEDDED_LOCALLY

    def _not_created_locally(self, logical_id: str) -> bool:
        resource = self._resources.get(logical_id)
        return resource is not None and (
            resource.get("Type") not in PROVISIONED_TYPES or not self._included(logical_id)
        )

    def _client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self._session.client(
                service,
                endpoint_url=self._service_endpoints.get(service, self._endpoint_url),
                region_name=self._region,
            )
        return self._clients[service]

    def _ensure(self, logical_id: str) -> _Created:
        if logical_id in self._created:
            return self._created[logical_id]
        resource = self._resources.get(logical_id)
        if resource is None:
            raise LocalTemplateError(f"{logical_id} is neither a parameter nor a resource")
        resource_type = resource.get("Type")
        creator = self._creators.get(resource_type)
        if creator is None:
            raise LocalTemplateError(
                f"{logical_id} ({resource_type}) has no local counterpart: only "
                f"{', '.join(PROVISIONED_TYPES)} are created locally"
            )
        if not self._included(logical_id):
            raise LocalTemplateError(f"{logical_id} is referenced but its condition is false")
        if logical_id in self._in_progress:
            cycle = " -> ".join([*self._in_progress, logical_id])
            raise LocalTemplateError(f"circular reference: {cycle}")
        self._in_progress.append(logical_id)
        try:
            properties = resource.get("Properties") or {}
            created = creator(self, logical_id, properties)
        finally:
            self._in_progress.pop()
        self._created[logical_id] = created
        return created

    def _name(self, logical_id: str, properties: Mapping[str, Any], key: str) -> str:
        if key in properties:
            return _as_string(self._resolve(properties[key]))
        return f"{self._prefix}-{logical_id}"

    def _queue(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        sqs = self._client("sqs")
        name = self._name(logical_id, properties, "QueueName")
        attributes = {
            key: _attribute_string(self._resolve(properties[key]))
            for key in _QUEUE_ATTRIBUTES
            if key in properties
        }
        try:
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError as error:
            if not _is_missing(error):
                raise
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        else:
            mutable = {k: v for k, v in attributes.items() if k not in _QUEUE_CREATE_ONLY}
            if mutable:
                sqs.set_queue_attributes(QueueUrl=url, Attributes=mutable)
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        return _Created(QUEUE_TYPE, url, name, {"Arn": arn, "QueueName": name, "QueueUrl": url})

    def _table(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        dynamodb = self._client("dynamodb")
        name = self._name(logical_id, properties, "TableName")
        spec = self._resolve(
            {k: properties[k] for k in ("KeySchema", "AttributeDefinitions") if k in properties}
        )
        indexes = [
            {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
            for index in self._resolve(properties.get("GlobalSecondaryIndexes") or [])
        ]
        try:
            description = dynamodb.describe_table(TableName=name)["Table"]
        except ClientError as error:
            if not _is_missing(error):
                raise
            arguments: dict[str, Any] = {
                "TableName": name,
                "BillingMode": "PAY_PER_REQUEST",
                **spec,
            }
            if indexes:
                arguments["GlobalSecondaryIndexes"] = indexes
            description = dynamodb.create_table(**arguments)["TableDescription"]
            if description.get("TableStatus") != "ACTIVE":  # moto's tables are active at once
                dynamodb.get_waiter("table_exists").wait(
                    TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
                )
            current_ttl: Mapping[str, Any] = {}
        else:
            self._check_table(logical_id, description, spec["KeySchema"], indexes)
            current_ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        ttl = self._resolve(properties.get("TimeToLiveSpecification"))
        if (
            ttl
            and ttl.get("Enabled")
            and (
                current_ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING")
                or current_ttl.get("AttributeName") != ttl["AttributeName"]
            )
        ):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={
                    "AttributeName": ttl["AttributeName"],
                    "Enabled": True,
                },
            )
        attributes = {"Arn": str(description["TableArn"])}
        if description.get("LatestStreamArn"):
            attributes["StreamArn"] = str(description["LatestStreamArn"])
        return _Created(TABLE_TYPE, name, name, attributes)

    @staticmethod
    def _check_table(
        logical_id: str,
        description: Mapping[str, Any],
        key_schema: Sequence[Mapping[str, str]],
        indexes: Sequence[Mapping[str, Any]],
    ) -> None:
        def keys(schema: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
            return [(k["AttributeName"], k["KeyType"]) for k in schema]

        existing = {
            index["IndexName"]: keys(index["KeySchema"])
            for index in description.get("GlobalSecondaryIndexes") or []
        }
        wanted = {index["IndexName"]: keys(index["KeySchema"]) for index in indexes}
        if keys(description["KeySchema"]) != keys(key_schema) or existing != wanted:
            raise LocalTemplateError(
                f"local table {description['TableName']} was made from another version of "
                f"{logical_id} in template.yaml: reset the local emulator (restart jobhooks dev)"
            )

    def _key(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        kms = self._client("kms")
        # KMS keys have no name: an alias of our own finds the key again on the next run.
        alias = f"alias/{self._prefix}/{logical_id}"
        try:
            metadata = kms.describe_key(KeyId=alias)["KeyMetadata"]
        except ClientError as error:
            if not _is_missing(error):
                raise
            description = _as_string(self._resolve(properties.get("Description", logical_id)))
            metadata = kms.create_key(Description=description)["KeyMetadata"]
            kms.create_alias(AliasName=alias, TargetKeyId=metadata["KeyId"])
            if self._resolve(properties.get("EnableKeyRotation")) is True:
                kms.enable_key_rotation(KeyId=metadata["KeyId"])
        key_id, arn = str(metadata["KeyId"]), str(metadata["Arn"])
        return _Created(KEY_TYPE, key_id, alias, {"Arn": arn, "KeyId": key_id})

    def _alias(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        kms = self._client("kms")
        name = _as_string(self._resolve(properties["AliasName"]))
        target = _as_string(self._resolve(properties["TargetKeyId"]))
        try:
            current = kms.describe_key(KeyId=name)["KeyMetadata"]["KeyId"]
        except ClientError as error:
            if not _is_missing(error):
                raise
            kms.create_alias(AliasName=name, TargetKeyId=target)
        else:
            if current != target:
                kms.update_alias(AliasName=name, TargetKeyId=target)
        return _Created(ALIAS_TYPE, name, name, {})

    def _secret(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        secrets = self._client("secretsmanager")
        name = self._name(logical_id, properties, "Name")
        wanted = self._secret_values.get(logical_id)
        try:
            arn = str(secrets.describe_secret(SecretId=name)["ARN"])
        except ClientError as error:
            if not _is_missing(error):
                raise
            value = wanted if wanted is not None else self._resolve(properties.get("SecretString"))
            if value is None and "GenerateSecretString" in properties:
                value = _generated_secret(self._resolve(properties["GenerateSecretString"]))
            if value is None:
                raise LocalTemplateError(
                    f"{logical_id}: only secrets with a SecretString or a GenerateSecretString "
                    "(or a value passed to provision) are created locally"
                ) from error
            arguments = {"Name": name, "SecretString": _as_string(value)}
            if "Description" in properties:
                arguments["Description"] = _as_string(self._resolve(properties["Description"]))
            arn = str(secrets.create_secret(**arguments)["ARN"])
        else:
            if wanted is not None:
                current = secrets.get_secret_value(SecretId=arn).get("SecretString")
                if current != wanted:
                    secrets.put_secret_value(SecretId=arn, SecretString=wanted)
        return _Created(SECRET_TYPE, arn, name, {"Id": arn})

    def _topic(self, logical_id: str, properties: Mapping[str, Any]) -> _Created:
        # CreateTopic is idempotent: the same name gives the same topic back.
        name = self._name(logical_id, properties, "TopicName")
        arn = str(self._client("sns").create_topic(Name=name)["TopicArn"])
        return _Created(TOPIC_TYPE, arn, name, {"TopicArn": arn, "TopicName": name})

    _creators: Final[dict[str, Callable[[_Provisioner, str, Mapping[str, Any]], _Created]]] = {
        QUEUE_TYPE: _queue,
        TABLE_TYPE: _table,
        KEY_TYPE: _key,
        ALIAS_TYPE: _alias,
        SECRET_TYPE: _secret,
        TOPIC_TYPE: _topic,
    }

    # -- functions ----------------------------------------------------------------------

    def _function(self, logical_id: str, resource: Mapping[str, Any]) -> LocalFunction:
        properties: Mapping[str, Any] = resource.get("Properties") or {}

        def setting(key: str, default: Any = None) -> Any:
            return self._resolve(properties.get(key, self._globals.get(key, default)))

        variables: dict[str, Any] = {}
        for source in (self._globals, properties):
            variables.update(((source.get("Environment") or {}).get("Variables")) or {})
        resolved = {k: self._resolve(v) for k, v in variables.items()}
        queues = list(self._sqs_event_sources(logical_id, properties))
        if len(queues) > 1:
            raise LocalTemplateError(
                f"{logical_id} has several SQS event sources; one is supported"
            )
        queue, batch_size, concurrency, window = queues[0] if queues else (None, None, None, 0)
        return LocalFunction(
            logical_id=logical_id,
            code_uri=_as_string(setting("CodeUri", "")),
            handler=_as_string(setting("Handler", "")),
            timeout_seconds=int(setting("Timeout", _SAM_DEFAULT_TIMEOUT)),
            memory_mb=int(setting("MemorySize", _SAM_DEFAULT_MEMORY)),
            variables=MappingProxyType(
                {k: _as_string(v) for k, v in resolved.items() if v is not _NO_VALUE}
            ),
            queue=queue,
            batch_size=batch_size,
            maximum_concurrency=concurrency,
            batching_window_seconds=window,
            schedule_seconds=self._schedule_seconds(logical_id, properties),
        )

    def _schedule_seconds(self, logical_id: str, properties: Mapping[str, Any]) -> int | None:
        rates = [
            _as_string(self._resolve((event.get("Properties") or {}).get("Schedule", "")))
            for event in (properties.get("Events") or {}).values()
            if event.get("Type") == "Schedule"
        ]
        if not rates:
            return None
        match = _RATE.match(rates[0]) if len(rates) == 1 else None
        if match is None:
            raise LocalTemplateError(
                f"{logical_id}: one Schedule event with a rate(N unit) expression is supported"
            )
        return int(match.group(1)) * _RATE_UNITS[match.group(2).rstrip("s")]

    def _sqs_event_sources(
        self, logical_id: str, properties: Mapping[str, Any]
    ) -> Iterator[tuple[str, int, int | None, int]]:
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") != "SQS":
                continue
            spec = event.get("Properties") or {}
            queue_arn = spec.get("Queue")
            if not (isinstance(queue_arn, dict) and "Fn::GetAtt" in queue_arn):
                raise LocalTemplateError(
                    f"{logical_id}: an SQS event's Queue must be !GetAtt X.Arn"
                )
            target = queue_arn["Fn::GetAtt"]
            queue = target.split(".", 1)[0] if isinstance(target, str) else target[0]
            scaling = self._resolve(spec.get("ScalingConfig") or {})
            concurrency = scaling.get("MaximumConcurrency")
            yield (
                str(queue),
                int(self._resolve(spec.get("BatchSize", 10))),
                int(concurrency) if concurrency is not None else None,
                int(self._resolve(spec.get("MaximumBatchingWindowInSeconds", 0))),
            )


def _generated_secret(spec: Mapping[str, Any]) -> str:
    """A random secret string as Secrets Manager's GenerateSecretString would make it; only the
    plain-string form (no SecretStringTemplate) with the options the template uses."""
    unsupported = set(spec) - {"PasswordLength", "ExcludePunctuation", "ExcludeCharacters"}
    if unsupported:
        raise LocalTemplateError(
            f"GenerateSecretString option(s) {sorted(unsupported)} are not reproduced locally"
        )
    alphabet = string.ascii_letters + string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += string.punctuation
    excluded = set(str(spec.get("ExcludeCharacters", "")))
    alphabet = "".join(c for c in alphabet if c not in excluded)
    length = int(spec.get("PasswordLength", 32))
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise LocalTemplateError(f"expected a scalar, got {value!r}")


def _attribute_string(value: Any) -> str:
    """A CloudFormation queue property as the SQS API wants the attribute: JSON for policies."""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return _as_string(value)


def _is_missing(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in {
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "ResourceNotFoundException",
        "NotFoundException",
    }
