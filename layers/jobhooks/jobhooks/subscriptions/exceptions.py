"""Errors of the subscriptions capability.

Each class carries a stable `code` (it appears in API error bodies, CLI output and logs) and a
message that says what to do. None of them ever carries a plaintext signing secret.
"""

from __future__ import annotations

from typing import ClassVar

from jobhooks.errors import JobhooksError


class SubscriptionError(JobhooksError):
    """Base class: `code` is stable, `message` is a sentence for the user."""

    code: ClassVar[str] = "subscription_error"


class SubscriptionNotFoundError(SubscriptionError):
    code = "subscription_not_found"

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"no subscription {subscription_id!r} exists for this tenant; "
            "list the tenant's subscriptions to find the right id"
        )
        self.subscription_id = subscription_id


class SubscriptionValidationError(SubscriptionError):
    """Input the caller can fix (HTTP 400, CLI exit 2)."""

    code = "invalid_subscription"


class InvalidEventTypeError(SubscriptionValidationError):
    code = "invalid_event_type"


class InvalidUrlError(SubscriptionValidationError):
    code = "invalid_url"


class InvalidTenantIdError(SubscriptionValidationError):
    code = "invalid_tenant_id"


class InvalidDescriptionError(SubscriptionValidationError):
    code = "invalid_description"


class InvalidStatusError(SubscriptionValidationError):
    code = "invalid_status"


class InvalidGracePeriodError(SubscriptionValidationError):
    code = "invalid_grace_period"


class SubscriptionConflictError(SubscriptionError):
    """Concurrent writers kept changing the subscription while this change was applied."""

    code = "subscription_conflict"

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"subscription {subscription_id!r} was changed concurrently several times in a row; "
            "read it again and retry the change"
        )
        self.subscription_id = subscription_id


class KmsKeyNotConfiguredError(SubscriptionError):
    code = "kms_key_not_configured"

    def __init__(self) -> None:
        super().__init__(
            "creating a subscription needs a KMS key to protect its signing secret; "
            "set JOBHOOKS_KMS_KEY_ID to a symmetric KMS key id, ARN or alias"
        )


class SecretDecryptionError(SubscriptionError):
    """A stored signing secret or its data key failed authenticated decryption."""

    code = "secret_unreadable"

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

    def __init__(self, operation: str, aws_code: str) -> None:
        super().__init__(
            f"KMS {operation} failed with {aws_code}; check that the key exists, is enabled "
            "and that this role may use it"
        )
        self.operation = operation
        self.aws_code = aws_code
