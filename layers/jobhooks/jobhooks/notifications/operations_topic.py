"""The operators' channel: every notification of every tenant on the stack's SNS topic.

One `Publish` per notification. The message is JSON (tenant, type, data, the subscription it is
about, how many deliveries it made); `type` and `tenant_id` are also message attributes, so an
operator's subscription can filter on them (an e-mail for `endpoint.disabled` only, say).
"""

from __future__ import annotations

import json
from typing import Any, Final

from jobhooks.notifications.model import Notification
from jobhooks.storage.times import format_timestamp

# SNS subjects are ASCII, at most 100 characters.
MAX_SUBJECT: Final = 100


class SnsOperationsTopic:
    def __init__(self, topic_arn: str, sns: Any) -> None:
        self.topic_arn = topic_arn
        self._sns = sns

    def publish(self, notification: Notification, *, deliveries: int) -> str:
        """Publish it; the SNS message id. Raises `ClientError` when SNS refused it."""
        message = {
            "notification_id": notification.event_id,
            "tenant_id": notification.tenant_id,
            "type": notification.type.value,
            "timestamp": format_timestamp(notification.at),
            "about_subscription": notification.about_subscription,
            "deliveries": deliveries,
            "data": notification.data,
        }
        subject = f"jobhooks {notification.type.value} ({notification.tenant_id})"
        subject = subject.encode("ascii", "replace").decode("ascii")[:MAX_SUBJECT]
        response = self._sns.publish(
            TopicArn=self.topic_arn,
            Subject=subject,
            Message=json.dumps(message, ensure_ascii=False, default=str),
            MessageAttributes={
                "type": {"DataType": "String", "StringValue": notification.type.value},
                "tenant_id": {"DataType": "String", "StringValue": notification.tenant_id},
            },
        )
        return str(response.get("MessageId", ""))
