"""Endpoint health: what jobhooks tells a tenant when one of its endpoints breaks, recovers,
is disabled, or lets a delivery run out of attempts (docs/notifications.md).

`model` (the health on the subscription item, the thresholds), one module per rule (`failing`,
`recovered`, `sustained_failure`, `exhausted`, `disabled`), `store` (the conditional writes
that make each state change exactly once), `observer` (the rules applied to every settled
attempt, in the deliver function and ingest's first attempts), `settings`, `wiring`.
"""
