"""The management API's configuration (docs/architecture.md, "Environment")."""

from collections.abc import Mapping
from enum import StrEnum

from pydantic import Field

from jobhooks.settings import Settings


class RedriveMethod(StrEnum):
    """How a dead-letter queue is redriven.

    `move_task` is SQS `StartMessageMoveTask` (AWS moves the messages itself, at a bounded rate);
    `resend` receives each message and sends it to the source queue ourselves, which works on
    emulators that lack message-move tasks (moto); `auto` picks `resend` exactly when an SQS
    endpoint override is configured (`AWS_ENDPOINT_URL_SQS` or `AWS_ENDPOINT_URL`), else
    `move_task`.
    """

    AUTO = "auto"
    MOVE_TASK = "move_task"
    RESEND = "resend"


class ManagementSettings(Settings):
    """Read once per configuration: `ManagementSettings.from_env()` names any bad variable."""

    subscriptions_table: str = Field(min_length=1)
    deliveries_table: str = Field(min_length=1)
    first_attempts_table: str = Field(min_length=1)
    claims_table: str = Field(min_length=1)
    quarantine_table: str = Field(min_length=1)
    delivery_queue_url: str = Field(min_length=1)
    delivery_dlq_url: str = Field(min_length=1)
    ingest_queue_url: str = Field(min_length=1)
    ingest_dlq_url: str = Field(min_length=1)
    # The spill path's queues (jobhooks.spill): `dlq --queue spill` needs them.
    spill_queue_url: str = ""
    spill_dlq_url: str = ""
    # Where notifications also go for operators (OperationsTopic); empty: only the tenant's
    # subscriptions (an operator's disable notifies `endpoint.disabled`).
    operations_topic_arn: str = ""
    # Job-health alert rules (/v1/alerts); the routes say so when it is missing.
    alert_rules_table: str = ""
    # Needed to create subscriptions and rotate secrets; the store says so when it is missing.
    kms_key_id: str = ""
    allow_private_webhooks: bool = False
    dlq_redrive: RedriveMethod = RedriveMethod.AUTO
    # The API function times out after 15 s (template.yaml); a test send must answer before.
    test_send_timeout_seconds: float = Field(10, gt=0, le=15)
    # The most subscriptions (endpoints) one tenant may have, from the API, the CLI or the
    # portal: each one multiplies what the tenant's events cost the bridge to deliver.
    max_subscriptions_per_tenant: int = Field(100, ge=1, le=10_000)
    # The stores need them for writes they make on our behalf (quarantine replay marks).
    dedup_retention_days: float = Field(7, gt=0, le=365)
    ingest_queue_retention_seconds: int = Field(4 * 86_400, ge=60, le=14 * 86_400)
    quarantine_retention_days: float = Field(30, gt=0, le=365)
    # How long deliveries are kept (the template's AttemptLogDays): the claims this process
    # writes (quarantine replays) outlive them, since a delivery id resolves through its claim.
    attempt_log_days: int = Field(30, ge=1, le=365)
    # Replays and test sends per minute of one tenant's own callers (tenant-bound and portal):
    # the API's throttle and the delivery queue are shared, so no tenant may use them up.
    tenant_sends_per_minute: int = Field(30, ge=1, le=10_000)


def sqs_endpoint_override(environ: Mapping[str, str]) -> str | None:
    """The SQS endpoint boto3 will use instead of AWS's, if the configuration names one."""
    return environ.get("AWS_ENDPOINT_URL_SQS") or environ.get("AWS_ENDPOINT_URL") or None


def effective_redrive_method(
    configured: RedriveMethod, environ: Mapping[str, str]
) -> RedriveMethod:
    if configured is not RedriveMethod.AUTO:
        return configured
    return RedriveMethod.RESEND if sqs_endpoint_override(environ) else RedriveMethod.MOVE_TASK
