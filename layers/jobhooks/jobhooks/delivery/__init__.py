"""Delivery: getting one webhook from the bridge to the receiver's endpoint.

Every attempt, first or later, is made and settled here. Read in the order a delivery flows
(docs/delivery.md):

    first_attempt   the first attempt of the deliveries of ingest's claimed events
                    (`FirstAttemptStage.deliver_first`): POSTed concurrently, fairly across
                    tenants, under one deadline; what is left to enqueue handed back to ingest
    circuit_breaker an endpoint that failed or answered slower than the latency budget is
                    left to the deliver function for a while
    deliver         the deliver function's use case: a task from the delivery queue in, a signed
                    POST out; and the one-off test send (`send_webhook_now`)
    subscription_cache
                    the deliver function's subscriptions, kept a few seconds and through the
                    item a failure's count returns; every other write of theirs forgets them
    attempt         one attempt: the subscription's signing secrets read, the signed POST
    settle          what an attempt comes to (succeeded; gone and disabled; retry scheduled;
                    parked), the one step both callers above share, and its observers
    model, ports    what it works with (attempts, records, statuses, failure classes, results)
                    and the small interfaces its log, subscriptions, HTTP client, queues and
                    metrics implement
    retry_schedule  when a failed delivery is tried again, and when the bridge gives up
    parking         the delivery DLQ: why a delivery is parked, and enqueueing a replay
    network_policy  which URLs and addresses the bridge may ever connect to (the SSRF rules,
                    URL shape included): checked at subscription changes and before every POST
    http_client     the only code that opens outbound connections; it asks the policy first on
                    every attempt. `make_webhook_client` builds it for deliveries and test sends
    keepalive       the idle connections a warm client may reuse, and their bounds
    attempt_log, first_attempts, stored_page, history, queues
                    the DynamoDB adapters of the attempt log and of the first-attempt pages (a
                    page as read back apart: ingest only writes them), the reads that join them,
                    and the SQS adapters of the delivery queue and DLQ
    metrics, settings, exceptions, wiring, limits
                    EMF metrics, the function's settings, the errors, settings -> Deliverer, and
                    the delivery id's shape (a plain constant the management API checks)
"""
