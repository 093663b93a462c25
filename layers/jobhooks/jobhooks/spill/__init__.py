"""The spill path: what ingest wrote after its webhooks went out, written later instead.

Once an event's webhooks are POSTed (or enqueued), retrying its ingest record would POST them
again. Two writes come after that point and are not about delivery: the analytics rows
(Firehose) and the first-attempt pages (`FirstAttemptsTable`). When one of them fails, ingest
does not fail the record: it sends what it could not write to the spill queue (`queue`), a
message per kind, completes the claims and acknowledges the records. The spill function
(`drain`, functions/spill) writes each message where it belongs, retrying with a growing
delay through the message's visibility; after `SpillQueue`'s maxReceiveCount the message
waits in the spill dead-letter queue for `jobhooks dlq redrive --queue spill`.

Only when the spill queue refuses too does the record fail as before (docs/ingest.md, "When a
write after the webhooks fails").
"""
