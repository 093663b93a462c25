"""Errors of the subscriptions capability.

Each class carries a stable `code` (it appears in API error bodies, CLI output and logs), the
HTTP `status` and request `field` of the API's answer (`jobhooks.exceptions`), and a message
that says what to do. None of them ever carries a plaintext signing secret.
"""

from __future__ import annotations

from http import HTTPStatus

from jobhooks.exceptions import JobhooksError


class SubscriptionError(JobhooksError):
    code = "subscription_error"


class SubscriptionNotFoundError(SubscriptionError):
    code = "subscription_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"no subscription {subscription_id!r} exists for this tenant; "
            "list the tenant's subscriptions to find the right id"
        )
        self.subscription_id = subscription_id


class SubscriptionValidationError(SubscriptionError):
    """Input the caller can fix: the answer names the field."""

    code = "invalid_subscription"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class InvalidEventTypeError(SubscriptionValidationError):
    code = "invalid_event_type"
    field = "event_types"


class InvalidJobNamePatternError(SubscriptionValidationError):
    code = "invalid_job_name_pattern"
    field = "job_names"


class InvalidUrlError(SubscriptionValidationError):
    code = "invalid_url"
    field = "url"


class InvalidTenantIdError(SubscriptionValidationError):
    code = "invalid_tenant_id"
    field = "tenant_id"


class InvalidDescriptionError(SubscriptionValidationError):
    code = "invalid_description"
    field = "description"


class InvalidStatusError(SubscriptionValidationError):
    code = "invalid_status"
    field = "status"


class InvalidGracePeriodError(SubscriptionValidationError):
    code = "invalid_grace_period"
    field = "grace_seconds"


class SubscriptionConflictError(SubscriptionError):
    """Concurrent writers kept changing the subscription while this change was applied."""

    code = "subscription_conflict"
    status = HTTPStatus.CONFLICT

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"subscription {subscription_id!r} was changed concurrently several times in a row; "
            "read it again and retry the change"
        )
        self.subscription_id = subscription_id


class SubscriptionLimitError(SubscriptionError):
    """The tenant already has as many subscriptions as one tenant may have."""

    code = "subscription_limit_reached"
    status = HTTPStatus.CONFLICT

    def __init__(self, tenant_id: str, limit: int) -> None:
        super().__init__(
            f"tenant {tenant_id!r} already has {limit} subscriptions, the most one tenant may "
            "have; delete one it no longer needs, or ask the operator to raise "
            "JOBHOOKS_MAX_SUBSCRIPTIONS_PER_TENANT"
        )
        self.tenant_id = tenant_id
        self.limit = limit


class KmsKeyNotConfiguredError(SubscriptionError):
    code = "kms_key_not_configured"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self) -> None:
        super().__init__(
            "creating a subscription needs a KMS key to protect its signing secret; "
            "set JOBHOOKS_KMS_KEY_ID to a symmetric KMS key id, ARN or alias"
        )


class SecretDecryptionError(SubscriptionError):
    """A stored signing secret or its data key failed authenticated decryption."""

    code = "secret_unreadable"
    status = HTTPStatus.CONFLICT

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"the signing secrets of subscription {subscription_id!r} cannot be decrypted "
            "(tampered or moved data, or a different KMS key); rotate its secret with "
            "grace 0 to issue a fresh one"
        )
        self.subscription_id = subscription_id


class KeyServiceError(SubscriptionError):
    """KMS refused or failed a call; `aws_code` is KMS's own error code."""

    code = "kms_error"
    status = HTTPStatus.BAD_GATEWAY

    def __init__(self, operation: str, aws_code: str) -> None:
        super().__init__(
            f"KMS {operation} failed with {aws_code}; check that the key exists, is enabled "
            "and that this role may use it"
        )
        self.operation = operation
        self.aws_code = aws_code
