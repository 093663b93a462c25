"""The inbound pipeline: one forwarded message in, one verified event and its outcome out.

Read it in the order a message flows through it:

1. `rejection`: the reason codes every refusal carries (docs/forwarded-message.md);
2. `envelope`: the forwarded-message codec (shovel -> SQS -> ingest) and `header_text`;
3. `keys`: the Fetcher external HMAC key (hex, or HKDF from APP_ENC_KEY);
4. `signed_bytes`: the canonical signed bytes and the legacy body-only form;
5. `verification`: presence, version, timestamp syntax, freshness, HMAC;
6. `freshness`: the bridge's freshness rule against SQS's receipt clock;
7. `cross_checks`: unsigned headers checked against signed data;
8. `event`: the wire body (camelCase, snake_case, legacy) as one `JobEvent`;
9. `job_events`: the whole pipeline, `read_job_event`;
10. `sanitize` and `outcome`: the event as the outcome customers receive, as data (the webhook's
    bytes, the analytics row's source);
11. `outcome_models`: the same outcome as validated models (schema, test sends, `inspect`),
    which no function builds to serve a message.
"""
