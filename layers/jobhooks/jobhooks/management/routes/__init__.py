"""The management API's routes: one Powertools `Router` per resource, each a module here.

    subscriptions   /v1/subscriptions...: create, list, show, change, delete, rotate, test send,
                    recover
    deliveries      /v1/deliveries...: attempt history, replay one delivery
    events          /v1/events...: replay one event, events no subscription wanted
    quarantine      /v1/quarantine...: rejected messages, replay after fixing the cause
    dlq             /v1/dlq...: what is parked in the dead-letter queues, redrive
    analytics       /v1/analytics...: the analytics table's reviewed questions and rows
                    (operators only: the table spans every tenant)
    alerts          /v1/alerts...: a tenant's job-health alert rules and their recent alerts
    grants          /v1/grants...: which IAM callers are bound to which tenants (operators)
    portal          /v1/portal/...: portal links and revocations (operators); the portal itself
                    is a function of its own (`jobhooks.portal.routes`, functions/portal)

Every module exposes `router`; `functions/api/app.py` includes them in this order (which is the
order of docs/openapi.json's paths) with `app.include_router(...)`. A route declares its input
and answers (`jobhooks.management.openapi`) and makes one call into `jobhooks.management` or
`jobhooks.access`; the stores, the clients and the caller come from the dependencies of
`dependencies`.
"""
