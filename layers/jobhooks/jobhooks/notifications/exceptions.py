"""Errors of the notifications capability."""

from __future__ import annotations

from datetime import datetime

from jobhooks.exceptions import JobhooksError


class NotificationError(JobhooksError):
    code = "notification_error"


class NotificationNotSentError(NotificationError):
    """The deliveries or the operators' message were not all accepted; `notify` may be called
    again with the same key: the deliveries keep their ids, and deliver drops a repeated one."""

    code = "notification_not_sent"

    def __init__(
        self, notification_type: str, tenant_id: str, cause: str, *, at: datetime | None = None
    ) -> None:
        super().__init__(
            f"the {notification_type} notification of tenant {tenant_id!r} was not sent "
            f"({cause}); it is retried with the same id"
        )
        self.notification_type = notification_type
        self.tenant_id = tenant_id
        self.at = at
        """The notification's time: sent again with it, its body is the same."""
