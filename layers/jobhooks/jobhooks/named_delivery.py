"""What a delivery id says when read back (`parse_delivery_id`): its event and subscription tag.

Its own module because only a delivery's history reads ids (`jobhooks.delivery.history`: the
deliver function and the management API); ingest makes ids and does not define this class at
import. `jobhooks.delivery_task` still exports it, on first use.
"""

from dataclasses import dataclass

from jobhooks.delivery_task import subscription_tag


@dataclass(frozen=True, slots=True)
class NamedDelivery:
    """What a delivery id says: its event, and a tag of its subscription."""

    event_id: str
    subscription_tag: str

    def is_for(self, subscription_id: str) -> bool:
        return subscription_tag(subscription_id) == self.subscription_tag
