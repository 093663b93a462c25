"""What the subscription store's management operations return: a secret issued, a page.

Apart from `store` because the event functions, which build a store at every cold start, never
create, rotate or list subscriptions (the management API and the portal do). `store` still
exports the names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobhooks.subscriptions.model import Subscription


@dataclass(frozen=True)
class IssuedSecret:
    """A subscription with the plaintext of its newest secret: shown to the tenant once."""

    subscription: Subscription
    secret: str = field(repr=False)


@dataclass(frozen=True)
class SubscriptionPage:
    """One page of subscriptions (the management API's and the portal's lists)."""

    subscriptions: tuple[Subscription, ...]
    next_cursor: str | None
