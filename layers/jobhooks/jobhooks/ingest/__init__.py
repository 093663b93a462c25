"""Ingest: verify forwarded Fetcher events, deduplicate on `ce-id`, fan out, quarantine rejects.

Read in the order a record flows (docs/ingest.md describes the behaviour):

    batch           an SQS event of the ingest queue in, the partial batch response out
    inbound         one message as the use case receives it (an SQS record, or a replay)
    service         the use case, `IngestService` (`ingest_record`, and for the management API
                    `refan_out`, `reingest`), speaking only to its ports; it hands its claimed
                    events' deliveries to the delivery package's first-attempt stage
                    (`jobhooks.delivery.first_attempt`) and enqueues what that gives back
    reading         one message read with the Fetcher keys of the moment (refreshed once)
    fan_out_plan    an event's payload and delivery tasks, decided before its claim
    writes_after_webhooks
                    the analytics rows, and the first-attempt pages when they failed: spilled
                    rather than failing an event whose webhooks went out
    refan_out       an operator's re-fan-out of a done event
    model, ports    what it works with (claims, records, quarantined messages, results) and
                    the small interfaces its stores, queues and first-attempt stage implement
    claims, quarantine, fan_out, busy_records
                    the DynamoDB and SQS adapters: the lease-carrying claim on a `ce-id`, the
                    kept rejects, one delivery task per matching subscription, early retries
                    (the tasks go out through `jobhooks.delivery_queue`, which the management
                    API and notifications share)
    fetcher_keys, claim_retention, telemetry, settings, exceptions, limits
                    the rules beside it (`limits`: the quarantine id's shape, a plain constant
                    the management API checks without importing the model)
    wiring          settings in, the service over AWS clients out (`ingest_service()`), and the
                    first-attempt stage built on the first batch that needs it
"""
