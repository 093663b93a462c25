-- question: which job_names wait in their queue: p50, p95 and maximum queue_wait_ms
-- grain: one row per job_name, with how many of its outcomes have a measured wait
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: rows listing queue_wait_ms in unmeasured are left out of the percentiles and
--   the maximum (null when a job_name has no measured wait); percentiles are nearest-rank
-- measured_column: measured_outcomes
-- when_unmeasured: Nothing in this window is measured: no outcome has a measured
--   queue_wait_ms. Fetcher's events carry no enqueue time, so every queue_wait_ms is a
--   filled-in 0 (docs/analytics.md says what would measure it).
SELECT
    job_name,
    count(*) AS outcomes,
    count_if(wait_measured) AS measured_outcomes,
    min(CASE WHEN wait_measured AND wait_rank >= ceil(0.50 * measured_in_job)
        THEN queue_wait_ms END) AS p50_queue_wait_ms,
    min(CASE WHEN wait_measured AND wait_rank >= ceil(0.95 * measured_in_job)
        THEN queue_wait_ms END) AS p95_queue_wait_ms,
    max(CASE WHEN wait_measured THEN queue_wait_ms END) AS max_queue_wait_ms
FROM (
    SELECT
        job_name,
        queue_wait_ms,
        wait_measured,
        row_number() OVER (PARTITION BY job_name, wait_measured ORDER BY queue_wait_ms)
            AS wait_rank,
        count(*) OVER (PARTITION BY job_name, wait_measured) AS measured_in_job
    FROM (
        SELECT
            job_name,
            queue_wait_ms,
            NOT contains(unmeasured, 'queue_wait_ms') AS wait_measured
        FROM outcomes
    ) AS flagged
) AS ranked
GROUP BY job_name
ORDER BY p95_queue_wait_ms DESC NULLS LAST, outcomes DESC, job_name
