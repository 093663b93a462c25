"""A webhook POSTed now, outside any delivery: what a test send answers
(`jobhooks.delivery.deliver.send_webhook_now`, the management API's and the portal's test send).

Its own module because no delivery builds one: the deliver function's cold start does not define
it. `batch` and `model` still export the name.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobhooks.delivery.model import DeliveryAttempt


@dataclass(frozen=True)
class SentWebhook:
    """A webhook POSTed: its id and the attempt that sent it."""

    webhook_id: str
    attempt: DeliveryAttempt
