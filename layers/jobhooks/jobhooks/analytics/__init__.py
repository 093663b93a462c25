"""The `background_job_completed` analytic table: one row per terminal outcome, and its questions.

Reads in the order a row flows (docs/analytics.md):

- `columns`: the table's columns, types and privacy classes: the one source of truth the Glue
  table, the DuckDB schema, the docs and the tests are derived from or checked against;
- `row`: an `AnalyticsRow` built from the outcome the webhook carries (`outcome_data`; never
  re-derived from the raw event),
  `pseudonymize`: the optional keyed pseudonyms of `account_id` and `job_id`;
- `sink` (the port), `firehose` (Amazon Data Firehose), `recorder`: outcomes in, rows written;
- `questions` and `sql/`: the reviewed questions, `window`: the time window they answer over,
  `results`: what an engine answers, `athena`: the engine on AWS (DuckDB's is in
  `jobhooks_tools.local.analytics`).

Importing this package imports neither boto3 nor anything heavy: the ingest function's cold
start pays only for what it uses.
"""
