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
from typing import Any

from jobhooks.access.access_store import AccessStore
from jobhooks.access.keys import KeyRing, SecretKeyRing, StaticKeyRing
from jobhooks.access.sessions import PortalSessions
from jobhooks.access.settings import PortalSettings


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
    from jobhooks.storage.clients import AUTHORIZER_MAX_ATTEMPTS, aws_client

    # The authorizer runs before every portal request and API Gateway waits for it: a slow
    # table gets one retry, then the request is refused, not held (storage.clients).
    attempts = AUTHORIZER_MAX_ATTEMPTS
    if keys is None:
        keys = (
            StaticKeyRing(settings.portal_key)
            if settings.portal_key
            else SecretKeyRing(
                settings.portal_key_secret_arn,
                client=aws_client("secretsmanager", session=session, max_attempts=attempts),
            )
        )
    store = AccessStore(
        settings.access_table,
        aws_client("dynamodb", session=session, max_attempts=attempts),
        clock=clock,
    )
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
