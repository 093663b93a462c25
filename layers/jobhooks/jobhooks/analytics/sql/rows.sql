-- question: which outcomes does the table hold for the window, one row per event_id
-- grain: one row per event_id (the outcomes view), the first 1,000 by timestamp_utc
-- window: the outcomes view's window, [from, to) on timestamp_utc
-- unmeasured: nothing is aggregated; `unmeasured` lists the fields each row could not supply
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
FROM outcomes
ORDER BY timestamp_utc, event_id
LIMIT 1001
