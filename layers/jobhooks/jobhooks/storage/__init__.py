"""The DynamoDB storage kit: what every store (claims, quarantine, attempt log, subscriptions)
is built from, so each rule of talking to AWS has one home (as Powertools keeps persistence
behind one base); and the one reader two packages share.

    clients     the one botocore `Config` (retries and timeouts: one documented decision,
                docs/architecture.md), AWS clients created on first use, a ClientError's code
    conditions  whether a conditional write failed its condition
    updates     `ItemUpdate`: an UpdateExpression with every name behind a placeholder
    cursors     the page cursor codec: opaque, bound to its listing, checked before DynamoDB
    pages       page sizes (default 50, at most 100) and cutting a page with its next cursor
    reads       every item (or every page) of a Query or Scan, following `LastEvaluatedKey`;
                every item of a set of keys (BatchGetItem, unprocessed keys asked again)
    times       the one clock and the stored-time codec (RFC 3339 UTC, milliseconds, `Z`)
    exceptions  the cursor and page-size errors every listing raises, and an AWS call that
                failed after botocore's retries (`AwsServiceError`)
    claim_reader, claimed_event
                an event's claim as its deliveries need it (its batch, its fan-out): ingest
                writes claims, delivery reads them here without importing ingest; what a read
                returns (`ClaimedEvent`) apart, since ingest uses the key helpers only

Importing the kit imports neither boto3 nor botocore: a function pays for them when it makes
its first AWS call.
"""
