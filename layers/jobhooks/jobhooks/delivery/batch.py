"""What only the deliver function's batch works with: an SQS record as it reads it.

Apart from `model` because ingest, which imports the model at every cold start for its first
attempts, reads no delivery-queue record. `model` still exports the names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from jobhooks.moved_names import moved_name

if TYPE_CHECKING:
    from jobhooks.delivery.sent_webhook import SentWebhook as SentWebhook

# A test send's webhook (`sent_webhook`), still importable from here: loaded on first use.
_MOVED: Final = {"SentWebhook": "jobhooks.delivery.sent_webhook"}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)


# A plain class: `@dataclass` compiles its generated methods at import (about 1 ms of the cold
# start on Python 3.12), and nothing compares, hashes or prints a record; it uses none but
# `__init__`.
class DeliveryMessage:
    """The parts of an SQS record the deliver function uses."""

    __slots__ = ("body", "message_id", "receipt_handle", "receive_count")

    def __init__(self, message_id: str, receipt_handle: str, body: str, receive_count: int) -> None:
        self.message_id = message_id
        self.receipt_handle = receipt_handle
        self.body = body
        self.receive_count = receive_count

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DeliveryMessage:
        attributes = record.get("attributes") or {}
        count = str(attributes.get("ApproximateReceiveCount", "1"))
        return cls(
            message_id=str(record["messageId"]),
            receipt_handle=str(record.get("receiptHandle", "")),
            body=str(record.get("body", "")),
            receive_count=max(1, int(count)) if count.isdigit() else 1,
        )
