"""What IAM authorizes for one botocore call: the actions, the resource ARNs, the condition keys.

Most operations are authorized as `<service>:<Operation>` on the resource the parameters name;
the exceptions are AWS's, written out here: a batch is authorized as its single action
(SendMessageBatch as sqs:SendMessage, DeleteMessageBatch as sqs:DeleteMessage), a DynamoDB batch
or transaction once per table it touches, a Query on an index on the index's ARN, KMS on the key
an alias or a ciphertext stands for, S3's listings as s3:ListBucket with `s3:prefix`.

An operation whose resource this module cannot name raises `UnmappedRequestError`: the guard
refuses it (fail closed) with that message, so a new kind of call is added here, not let through.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlparse

from jobhooks_tools.local.iam.policy import Request


class UnmappedRequestError(Exception):
    """An AWS call whose IAM action or resource the local evaluator does not know."""


@dataclass(frozen=True, slots=True)
class CallSite:
    """Where the call goes: what a resource ARN needs besides the parameters."""

    region: str
    account: str
    partition: str = "aws"
    # Local names of resources the parameters name indirectly: secret name -> ARN, KMS alias
    # name -> key id.
    secret_arns: Mapping[str, str] | None = None
    key_aliases: Mapping[str, str] | None = None


# Calls IAM does not authorize at all (anyone may make them).
UNAUTHORIZED_CALLS: Final = frozenset({("sts", "GetCallerIdentity")})

# Operations authorized as another action of the same service.
_ACTION_OF: Final[dict[tuple[str, str], str]] = {
    ("sqs", "SendMessageBatch"): "SendMessage",
    ("sqs", "DeleteMessageBatch"): "DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "ChangeMessageVisibility",
    ("dynamodb", "TransactGetItems"): "GetItem",
    ("s3", "ListObjects"): "ListBucket",
    ("s3", "ListObjectsV2"): "ListBucket",
    ("s3", "ListObjectVersions"): "ListBucketVersions",
    ("s3", "HeadBucket"): "ListBucket",
    ("s3", "HeadObject"): "GetObject",
    ("s3", "CreateMultipartUpload"): "PutObject",
    ("s3", "UploadPart"): "PutObject",
    ("s3", "CompleteMultipartUpload"): "PutObject",
    ("s3", "ListMultipartUploads"): "ListBucketMultipartUploads",
    ("s3", "ListParts"): "ListMultipartUploadParts",
    ("s3", "DeleteObjects"): "DeleteObject",
}


def authorizations(
    service: str, prefix: str, operation: str, params: Mapping[str, Any], site: CallSite
) -> list[Request]:
    """Every (action, resource) IAM checks for this call; all must be allowed.

    `service` is botocore's service name, `prefix` the IAM action prefix (its signing name).
    """
    if (service, operation) in UNAUTHORIZED_CALLS:
        return []
    mapper = _MAPPERS.get(service)
    if mapper is None:
        raise UnmappedRequestError(
            f"{prefix}:{operation}: the local IAM evaluator does not know {service}'s resources"
        )
    action = f"{prefix}:{_ACTION_OF.get((service, operation), operation)}"
    return mapper(action, operation, params, site)


def _base(site: CallSite, service: str) -> str:
    return f"arn:{site.partition}:{service}:{site.region}:{site.account}"


# ------------------------------------------------------------------------------ DynamoDB

_TRANSACT_ACTIONS: Final = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
    "Get": "dynamodb:GetItem",
}


def _table_arn(site: CallSite, table: str) -> str:
    return table if table.startswith("arn:") else f"{_base(site, 'dynamodb')}:table/{table}"


def _dynamodb(
    action: str, operation: str, params: Mapping[str, Any], site: CallSite
) -> list[Request]:
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [Request(action, _table_arn(site, t)) for t in params.get("RequestItems", {})]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for item in params.get("TransactItems", []):
            for kind, spec in item.items():
                found.append(Request(_TRANSACT_ACTIONS[kind], _table_arn(site, spec["TableName"])))
        return found
    if operation in ("ListTables", "DescribeLimits", "DescribeEndpoints"):
        return [Request(action, "*")]
    table = params.get("TableName") or params.get("ResourceArn")
    if not table:
        raise UnmappedRequestError(f"{action}: no TableName to authorize against")
    arn = _table_arn(site, str(table))
    if params.get("IndexName"):
        arn += f"/index/{params['IndexName']}"
    return [Request(action, arn)]


# ------------------------------------------------------------------------------ SQS


def _queue_arn(site: CallSite, url: str) -> str:
    # https://sqs.<region>.amazonaws.com/<account>/<name>, moto's http://host:port/<account>/<name>
    parts = [p for p in urlparse(url).path.split("/") if p]
    if len(parts) != 2:
        raise UnmappedRequestError(f"{url!r} is not a queue URL")
    account, name = parts
    return f"arn:{site.partition}:sqs:{site.region}:{account}:{name}"


def _sqs(action: str, operation: str, params: Mapping[str, Any], site: CallSite) -> list[Request]:
    if params.get("QueueUrl"):
        return [Request(action, _queue_arn(site, str(params["QueueUrl"])))]
    if operation == "GetQueueUrl":
        account = params.get("QueueOwnerAWSAccountId") or site.account
        return [
            Request(
                action, f"arn:{site.partition}:sqs:{site.region}:{account}:{params['QueueName']}"
            )
        ]
    if operation == "CreateQueue":
        return [Request(action, f"{_base(site, 'sqs')}:{params['QueueName']}")]
    if operation in ("StartMessageMoveTask", "ListMessageMoveTasks"):
        return [Request(action, str(params["SourceArn"]))]
    if operation == "CancelMessageMoveTask":
        raise UnmappedRequestError(f"{action}: the task handle names no queue locally")
    if operation == "ListQueues":
        return [Request(action, "*")]
    raise UnmappedRequestError(f"{action}: no queue to authorize against")


# ------------------------------------------------------------------------------ KMS


def _key_arn(site: CallSite, key: str) -> str:
    if key.startswith("arn:") and ":key/" in key:
        return key
    if key.startswith("arn:") and ":alias/" in key:
        key = "alias/" + key.split(":alias/", 1)[1]
    if key.startswith("alias/"):
        # KMS authorizes the key an alias points to (alias names only decide with kms:RequestAlias).
        target = (site.key_aliases or {}).get(key)
        if target is None:
            raise UnmappedRequestError(f"KMS alias {key} is not one of the local stack's")
        key = target
    return f"{_base(site, 'kms')}:key/{key}"


def _ciphertext_key(blob: Any) -> str:
    """The key a ciphertext was made under. moto's ciphertext blobs start with the key id."""
    raw = blob if isinstance(blob, bytes) else base64.b64decode(str(blob))
    key_id = raw[:36].decode("ascii", errors="replace")
    if len(key_id) != 36 or key_id.count("-") != 4:
        raise UnmappedRequestError("kms:Decrypt: the ciphertext names no key the evaluator reads")
    return key_id


def _kms(action: str, operation: str, params: Mapping[str, Any], site: CallSite) -> list[Request]:
    key = params.get("KeyId") or params.get("TargetKeyId")
    if not key and operation in ("Decrypt", "ReEncrypt"):
        key = _ciphertext_key(params.get("CiphertextBlob") or params.get("SourceCiphertextBlob"))
    if operation in ("CreateKey", "ListKeys", "ListAliases", "GenerateRandom"):
        return [Request(action, "*")]
    if not key:
        raise UnmappedRequestError(f"{action}: no KeyId to authorize against")
    return [Request(action, _key_arn(site, str(key)))]


# ------------------------------------------------------------------------------ Secrets Manager


def _secretsmanager(
    action: str, operation: str, params: Mapping[str, Any], site: CallSite
) -> list[Request]:
    if operation in ("ListSecrets", "GetRandomPassword", "CreateSecret", "BatchGetSecretValue"):
        raise UnmappedRequestError(f"{action}: not used by the functions; map it first")
    secret = str(params.get("SecretId") or "")
    if not secret:
        raise UnmappedRequestError(f"{action}: no SecretId to authorize against")
    if not secret.startswith("arn:"):
        # Secrets Manager authorizes the full ARN (name plus its random suffix).
        secret = (site.secret_arns or {}).get(
            secret
        ) or f"{_base(site, 'secretsmanager')}:secret:{secret}"
    return [Request(action, secret)]


# ------------------------------------------------------------------------------ Firehose


def _firehose(
    action: str, operation: str, params: Mapping[str, Any], site: CallSite
) -> list[Request]:
    name = params.get("DeliveryStreamName")
    if not name:
        if operation == "ListDeliveryStreams":
            return [Request(action, "*")]
        raise UnmappedRequestError(f"{action}: no DeliveryStreamName to authorize against")
    return [Request(action, f"{_base(site, 'firehose')}:deliverystream/{name}")]


# ------------------------------------------------------------------------------ S3

_S3_BUCKET_KEYS: Final = frozenset({"prefix", "delimiter", "max-keys"})


def _s3(action: str, operation: str, params: Mapping[str, Any], site: CallSite) -> list[Request]:
    bucket = params.get("Bucket")
    if not bucket:
        if operation == "ListBuckets":
            return [Request("s3:ListAllMyBuckets", "*")]
        raise UnmappedRequestError(f"{action}: no Bucket to authorize against")
    arn = f"arn:{site.partition}:s3:::{bucket}"
    if operation == "DeleteObjects":
        keys = [o["Key"] for o in (params.get("Delete") or {}).get("Objects", [])]
        return [Request(action, f"{arn}/{key}") for key in keys]
    if "Key" in params:
        return [Request(action, f"{arn}/{params['Key']}")]
    context: dict[str, tuple[str, ...]] = {}
    if action == "s3:ListBucket":
        for name, param in (
            ("prefix", "Prefix"),
            ("delimiter", "Delimiter"),
            ("max-keys", "MaxKeys"),
        ):
            if param in params:
                context[f"s3:{name}"] = (str(params[param]),)
    return [Request(action, arn, context)]


# ------------------------------------------------------------------------------ Athena, Glue


def _athena(
    action: str, operation: str, params: Mapping[str, Any], site: CallSite
) -> list[Request]:
    workgroup = params.get("WorkGroup")
    if operation == "StartQueryExecution":
        workgroup = workgroup or "primary"
    if not workgroup:
        raise UnmappedRequestError(
            f"{action}: the query execution's workgroup is not known locally"
        )
    return [Request(action, f"{_base(site, 'athena')}:workgroup/{workgroup}")]


def _glue(action: str, operation: str, params: Mapping[str, Any], site: CallSite) -> list[Request]:
    base = _base(site, "glue")
    catalog = f"{base}:catalog"
    if operation == "GetDatabase":
        return [Request(action, catalog), Request(action, f"{base}:database/{params['Name']}")]
    if operation in ("GetTable", "GetTableVersion", "GetTableVersions", "GetPartitions"):
        database = params["DatabaseName"]
        table = params.get("Name") or params.get("TableName")
        return [
            Request(action, catalog),
            Request(action, f"{base}:database/{database}"),
            Request(action, f"{base}:table/{database}/{table}"),
        ]
    raise UnmappedRequestError(f"{action}: not used by the functions; map it first")


# ------------------------------------------------------------------------------ SNS


def _sns(action: str, operation: str, params: Mapping[str, Any], site: CallSite) -> list[Request]:
    # The operators' topic (jobhooks.notifications): Publish names the topic by its ARN.
    topic = params.get("TopicArn") or params.get("TargetArn")
    if operation != "Publish" or not topic:
        raise UnmappedRequestError(f"{action}: not used by the functions; map it first")
    return [Request(action, str(topic))]


_MAPPERS: Final[dict[str, Callable[[str, str, Mapping[str, Any], CallSite], list[Request]]]] = {
    "dynamodb": _dynamodb,
    "sqs": _sqs,
    "kms": _kms,
    "secretsmanager": _secretsmanager,
    "firehose": _firehose,
    "s3": _s3,
    "athena": _athena,
    "glue": _glue,
    "sns": _sns,
}
