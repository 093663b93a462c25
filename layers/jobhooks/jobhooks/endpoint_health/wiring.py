"""An `EndpointHealthObserver` over real clients, from `EndpointHealthSettings`."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from jobhooks.endpoint_health.observer import Disabler, EndpointHealthObserver, Notify
from jobhooks.endpoint_health.settings import EndpointHealthSettings
from jobhooks.endpoint_health.store import HealthRecords
from jobhooks.storage.clients import aws_client


def build_health_observer(
    settings: EndpointHealthSettings,
    subscriptions: Disabler,
    *,
    cache_seconds: float = 0.0,
    session: Any = None,
) -> EndpointHealthObserver:
    """`subscriptions`: the process's store (disables through it, so its caches hear of it)."""
    return EndpointHealthObserver(
        records=HealthRecords(
            settings.subscriptions_table, aws_client("dynamodb", session=session)
        ),
        subscriptions=subscriptions,
        notifier=NotifierOnFirstUse(settings, session=session),
        thresholds=settings.health_thresholds(),
        cache_seconds=cache_seconds,
    )


class NotifierOnFirstUse:
    """The `Notifier` of these settings, built by the first notification.

    The observer notifies only when an endpoint's state changes (failing, recovered, disabled,
    a delivery exhausted) or a notification is owed: most executions never do. Building it up
    front imported the notifications' wiring, notifier, models and SNS adapter into every cold
    start of the deliver function (and ingest's first-attempt stage) for nothing.
    """

    def __init__(self, settings: EndpointHealthSettings, *, session: Any = None) -> None:
        self._settings = settings
        self._session = session
        self._notifier: Notify | None = None
        self._lock = threading.Lock()

    def notify(
        self,
        tenant_id: str,
        type: str,
        data: Mapping[str, Any],
        about_subscription: str | None = None,
        *,
        key: str | None = None,
        at: datetime | None = None,
    ) -> Any:
        return self.notifier().notify(tenant_id, type, data, about_subscription, key=key, at=at)

    def notifier(self) -> Notify:
        """The real notifier (built once, by whichever worker thread asks first)."""
        with self._lock:
            if self._notifier is None:
                from jobhooks.notifications.wiring import build_notifier

                self._notifier = build_notifier(self._settings, session=self._session)
            return self._notifier
