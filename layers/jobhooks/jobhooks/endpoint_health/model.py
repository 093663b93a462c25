"""An endpoint's health as the subscription item keeps it, and the rules' thresholds.

Pure: no AWS client here. Three attributes of the subscription item (`health_*`, written only by
`endpoint_health.store`), read with the subscription itself, so a delivery to a healthy endpoint
costs no read and no write beyond what it already did:

- `consecutive_failures`: failed attempts since the last success;
- `failing_since`: when the first of them was made (None after a success);
- `failing`: `endpoint.failing` went out for this run of failures (`endpoint.recovered` ends it).

And, only while one is owed, the notifications whose sending failed (`endpoint_health.owed`).
"""

from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict

from jobhooks.endpoint_health.owed import OwedNotification
from jobhooks.frozen_record import FrozenRecord

DEFAULT_FAILING_AFTER: Final = 5
# Svix's rule: an endpoint whose every attempt failed for five days is disabled.
DEFAULT_AUTO_DISABLE_AFTER: Final = timedelta(hours=120)


class EndpointHealth(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    consecutive_failures: int = 0
    failing_since: datetime | None = None
    failing: bool = False
    owed: tuple[OwedNotification, ...] = ()

    @property
    def is_clean(self) -> bool:
        """Nothing to reset after a success: the common case, which writes nothing."""
        return self.consecutive_failures == 0 and not self.failing

    def owing(self, notification: OwedNotification) -> "EndpointHealth":
        """This health, owing `notification` too (once: one per key)."""
        kept = tuple(o for o in self.owed if o.attribute != notification.attribute)
        return self.model_copy(update={"owed": (*kept, notification)})

    def sent(self, notification: OwedNotification) -> "EndpointHealth":
        """This health, no longer owing `notification`."""
        return self.model_copy(update={"owed": tuple(o for o in self.owed if o != notification)})

    def re_enabled(self) -> "EndpointHealth":
        """An endpoint enabled again starts a clean run; what it owes is still owed."""
        return EndpointHealth(owed=self.owed) if self.owed else HEALTHY


HEALTHY: Final = EndpointHealth()


class HealthThresholds(FrozenRecord):
    """`failing_after` failed attempts in a row make an endpoint failing; every attempt failing
    for `auto_disable_after` (None: never) disables it."""

    __slots__ = ("auto_disable_after", "failing_after")
    failing_after: int
    auto_disable_after: timedelta | None

    def __init__(
        self,
        failing_after: int = DEFAULT_FAILING_AFTER,
        auto_disable_after: timedelta | None = DEFAULT_AUTO_DISABLE_AFTER,
    ) -> None:
        object.__setattr__(self, "failing_after", failing_after)
        object.__setattr__(self, "auto_disable_after", auto_disable_after)
