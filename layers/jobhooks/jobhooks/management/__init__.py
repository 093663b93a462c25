"""Management: the one implementation behind the management API and the `jobhooks` CLI.

The API's routes (`routes/`, one Powertools `Router` per resource, included by
`functions/api/app.py`) call one function here per route; the CLI talks to that API. Each
module is one area an operator works in:

    subscriptions   create, list, show, change, delete, rotate secrets, send a test webhook
    deliveries      attempt history, replay one delivery, replay one event, unmatched events
    quarantine      rejected messages with their reason codes, replay after fixing the cause
    dlq             what is parked in the dead-letter queues, and redrive

`context.ManagementContext` holds the stores and clients every operation works on; `models`
holds the request and response shapes (the OpenAPI document is generated from them);
`exceptions` holds this package's errors and the one mapping of every error a caller can hit to
an HTTP status, a stable code and a message.
"""

from jobhooks.lazy_packages import HEAVY_POWERTOOLS_PACKAGES, defer_package_init

# Before any route, model or resolver here imports Powertools' event handler: the HTTP functions
# (management API, portal) load the HTTP resolver alone, not every resolver and event class.
for _package in HEAVY_POWERTOOLS_PACKAGES:
    defer_package_init(_package)
