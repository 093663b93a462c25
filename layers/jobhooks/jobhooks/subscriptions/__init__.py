"""Subscriptions: who wants which events, where, signed with which secrets.

`model` and `exceptions` are pure and imported here; the DynamoDB/KMS store lives in
`jobhooks.subscriptions.store` (import it where AWS clients are wanted).
"""

from jobhooks.subscriptions.exceptions import (
    InvalidDescriptionError,
    InvalidEventTypeError,
    InvalidGracePeriodError,
    InvalidJobNamePatternError,
    InvalidStatusError,
    InvalidTenantIdError,
    InvalidUrlError,
    KeyServiceError,
    KmsKeyNotConfiguredError,
    SecretDecryptionError,
    SubscriptionConflictError,
    SubscriptionError,
    SubscriptionLimitError,
    SubscriptionNotFoundError,
    SubscriptionValidationError,
)
from jobhooks.subscriptions.model import (
    ALL_EVENT_TYPES,
    DEFAULT_EVENT_TYPES,
    JOB_EVENT_TYPES,
    NOTIFICATION_EVENT_TYPES,
    EventType,
    SecretVersion,
    Subscription,
    SubscriptionStatus,
)

__all__ = [
    "ALL_EVENT_TYPES",
    "DEFAULT_EVENT_TYPES",
    "JOB_EVENT_TYPES",
    "NOTIFICATION_EVENT_TYPES",
    "EventType",
    "InvalidDescriptionError",
    "InvalidEventTypeError",
    "InvalidGracePeriodError",
    "InvalidJobNamePatternError",
    "InvalidStatusError",
    "InvalidTenantIdError",
    "InvalidUrlError",
    "KeyServiceError",
    "KmsKeyNotConfiguredError",
    "SecretDecryptionError",
    "SecretVersion",
    "Subscription",
    "SubscriptionConflictError",
    "SubscriptionError",
    "SubscriptionLimitError",
    "SubscriptionNotFoundError",
    "SubscriptionStatus",
    "SubscriptionValidationError",
]
