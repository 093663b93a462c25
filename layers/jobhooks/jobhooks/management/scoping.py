"""The tenant scope of a /v1 request, for its caller (docs/api.md, "Who may call").

Operators keep the API as it was: the optional `tenant_id` of a route narrows it, nothing else.
For a tenant-bound caller:

- a route that names a tenant (`tenant_id` in the body or query) acts on it only if it is one
  of the caller's tenants; another tenant is "not found" (`TenantNotFoundError`, 404), so a
  listing never tells whether another tenant has anything;
- a route that names an object (a subscription, a delivery, an event) first finds the object's
  tenant; an object of another tenant gets exactly the answer an id that exists nowhere gets
  (the object's own not-found error), before anything else about the request is judged (a new
  URL's network policy, an event's state);
- the scope returned is the object's tenant, which the operation then applies itself (the
  stores check it again on every write).
"""

from __future__ import annotations

from jobhooks.access.callers import Caller
from jobhooks.delivery.exceptions import DeliveryNotFoundError
from jobhooks.ingest.exceptions import EventNotFoundError
from jobhooks.management.context import ManagementContext
from jobhooks.subscriptions.exceptions import SubscriptionNotFoundError


def named_tenant(caller: Caller, requested: str) -> str:
    """The tenant a create or a listing acts on: `requested`, when the caller may."""
    scoped = caller.scope(requested)
    assert scoped is not None  # a named tenant is never widened
    return scoped


def subscription_scope(
    context: ManagementContext, caller: Caller, subscription_id: str, requested: str | None
) -> str | None:
    if caller.is_operator:
        return requested
    tenant = context.subscriptions.get(subscription_id).tenant_id
    if not _allowed(caller, tenant, requested):
        raise SubscriptionNotFoundError(subscription_id)
    return tenant


def delivery_scope(
    context: ManagementContext, caller: Caller, delivery_id: str, requested: str | None
) -> str | None:
    if caller.is_operator:
        return requested
    tenant = context.delivery_history.get(delivery_id).tenant_id
    if not _allowed(caller, tenant, requested):
        raise DeliveryNotFoundError(delivery_id)
    return tenant


def event_scope(
    context: ManagementContext,
    caller: Caller,
    event_id: str,
    requested: str | None,
    *,
    recorded: bool = True,
) -> str | None:
    """`recorded=False`: an event whose record is gone (past the dedup retention) may still be
    listed within the caller's tenant (its deliveries are kept longer)."""
    if caller.is_operator:
        return requested
    record = context.claims.get(event_id)
    if record is None and not recorded:
        tenant = caller.scope(requested)
        if tenant is not None:
            return tenant
    if record is None or not _allowed(caller, record.tenant_id, requested):
        raise EventNotFoundError(event_id)
    return record.tenant_id


def _allowed(caller: Caller, tenant: str, requested: str | None) -> bool:
    return caller.may_act_for(tenant) and requested in (None, tenant)
