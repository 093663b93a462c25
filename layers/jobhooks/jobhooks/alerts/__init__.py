"""Job-health alerts: rules per tenant, evaluated on a schedule from the analytics table.

`model` (rules and their input rules; `limits`, their bounds as plain constants),
`evaluation` (the thresholds, pure), `store` (DynamoDB),
`evaluator` (the scheduled use case), `wiring`. A state change goes out through
`jobhooks.notifications` as `job_health.degraded` / `job_health.recovered`
(docs/notifications.md).
"""
