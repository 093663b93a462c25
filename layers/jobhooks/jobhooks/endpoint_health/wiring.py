"""An `EndpointHealthObserver` over real clients, from `EndpointHealthSettings`."""

from __future__ import annotations

from typing import Any

from jobhooks.endpoint_health.observer import Disabler, EndpointHealthObserver
from jobhooks.endpoint_health.settings import EndpointHealthSettings
from jobhooks.endpoint_health.store import HealthRecords
from jobhooks.notifications.wiring import build_notifier
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
        notifier=build_notifier(settings, session=session),
        thresholds=settings.health_thresholds(),
        cache_seconds=cache_seconds,
    )
