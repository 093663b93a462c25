"""What a process that notifies needs (`JOBHOOKS_*`; docs/notifications.md)."""

from pydantic import Field

from jobhooks.settings import Settings


class NotificationSettings(Settings):
    subscriptions_table: str = Field(min_length=1)
    delivery_queue_url: str = Field(min_length=1)
    # The stack's SNS topic for operators (OperationsTopic); empty: none.
    operations_topic_arn: str = ""
