"""A tenant's replays and test sends per minute: the one budget the /v1 routes and the portal's
API both draw on, so a tenant's CI and its people share one share of the deliver path."""

from __future__ import annotations

from typing import Any, Final

from jobhooks.access.callers import Caller, PortalPass
from jobhooks.management.exceptions import TenantSendLimitError


class SendBudget:
    """Replays and test sends of one tenant's own callers, counted per minute in the access
    table (so across every instance of the function): past the tenant's share, 429 with
    Retry-After. Operators are not counted: they act for the deployment, not for one tenant."""

    WINDOW_SECONDS: Final = 60

    def __init__(self, store: Any, per_minute: int) -> None:
        self._store = store
        self.per_minute = per_minute

    def take(self, caller: Caller | PortalPass, tenant_id: str | None) -> None:
        if isinstance(caller, Caller) and caller.is_operator:
            return
        tenant = caller.tenant_id if isinstance(caller, PortalPass) else tenant_id
        if tenant is None:
            return
        wait = self._store.take_send(
            tenant, limit=self.per_minute, window_seconds=self.WINDOW_SECONDS
        )
        if wait is not None:
            raise TenantSendLimitError(self.per_minute, wait)
