-- view: outcomes, the one deduplicated view every reviewed query reads
-- grain: one row per event_id, one terminal outcome per logical job
-- window: rows whose timestamp_utc is at or after `from` and before `to` (UTC); the partitions
--   read start one day before `from` (a row is written after its outcome, and a producer clock
--   may run ahead by less than a day)
-- dedup: writes are at least once (a crash between the write and the claim's completion writes
--   a row again); copies of one event_id come from the same outcome, and the copy in the
--   earliest partition is kept
-- parameters: first partition (yyyy-MM-dd), from and to ('yyyy-MM-dd HH:mm:ss.SSS', UTC)
SELECT
    timestamp_utc,
    event_id,
    release,
    account_id,
    job_id,
    job_name,
    queue_name,
    attempt_count,
    queue_wait_ms,
    duration_ms,
    status,
    unmeasured,
    error_category
FROM (
    SELECT
        written.*,
        row_number() OVER (PARTITION BY event_id ORDER BY dt, timestamp_utc) AS copy_number
    FROM background_job_completed AS written
    WHERE dt >= ?
) AS copies
WHERE copy_number = 1
    AND timestamp_utc >= CAST(? AS TIMESTAMP)
    AND timestamp_utc < CAST(? AS TIMESTAMP)
