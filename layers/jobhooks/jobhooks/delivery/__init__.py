"""Delivery: getting one webhook from the bridge to the receiver's endpoint.

Read in the order a delivery task flows (docs/delivery.md):

    deliver         the use case: a task in, a signed POST out, every outcome recorded; and the
                    one-off test send (`send_webhook_now`)
    model, ports    what it works with (attempts, records, statuses, failure classes, results)
                    and the small interfaces its log, subscriptions, HTTP client and metrics
                    implement
    retry_schedule  when a failed delivery is tried again, and when the bridge gives up
    parking         the delivery DLQ: why a delivery is parked, and enqueueing a replay
    network_policy  which URLs and addresses the bridge may ever connect to (the SSRF rules,
                    URL shape included): checked at subscription changes and before every POST
    http_client     the only code that opens outbound connections; it asks the policy first on
                    every attempt. `make_webhook_client` builds it for deliveries and test sends
    keepalive       the idle connections a warm client may reuse, and their bounds
    attempt_log     the DynamoDB adapter of the attempt log (`DeliveriesTable`)
    metrics, settings, exceptions, wiring
                    EMF metrics, the function's settings, the errors, and settings -> Deliverer
"""
