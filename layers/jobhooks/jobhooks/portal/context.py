"""What the portal's routes and its authorizer work on: the access store and the sessions.

One `PortalContext` per process and configuration (`get_portal_context`), over boto3 clients
created on first use. Tests build their own (`build_portal_context`) with a clock, and hand it
to the API through the Event Handler's `dependency_overrides`, as they do the management
context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from jobhooks.portal.access_store import AccessStore
from jobhooks.portal.keys import KeyRing, SecretKeyRing, StaticKeyRing
from jobhooks.portal.sessions import PortalSessions
from jobhooks.portal.settings import PortalSettings

# The authorizer runs before every portal request and API Gateway waits for it: a slow
# DynamoDB gets a short leash and one retry, then the request is refused, not held.
_CONNECT_TIMEOUT: Final = 2
_READ_TIMEOUT: Final = 3
_ATTEMPTS: Final = 2


@dataclass
class PortalContext:
    settings: PortalSettings
    store: AccessStore
    sessions: PortalSessions


def build_portal_context(
    settings: PortalSettings,
    *,
    session: Any = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    keys: KeyRing | None = None,
) -> PortalContext:
    settings.require_configured()
    import boto3
    from botocore.config import Config

    make_client = session.client if session is not None else boto3.client
    config = Config(
        retries={"mode": "standard", "max_attempts": _ATTEMPTS},
        connect_timeout=_CONNECT_TIMEOUT,
        read_timeout=_READ_TIMEOUT,
    )
    if keys is None:
        keys = (
            StaticKeyRing(settings.portal_key)
            if settings.portal_key
            else SecretKeyRing(
                settings.portal_key_secret_arn,
                client=make_client("secretsmanager", config=config),
            )
        )
    store = AccessStore(settings.access_table, make_client("dynamodb", config=config), clock=clock)
    return PortalContext(
        settings=settings,
        store=store,
        sessions=PortalSessions(
            store, keys, session_lifetime=settings.session_lifetime, clock=clock
        ),
    )


@functools.lru_cache(maxsize=4)
def get_portal_context(settings: PortalSettings) -> PortalContext:
    return build_portal_context(settings)
