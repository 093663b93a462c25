-- question: how do failure rate and p95 duration of each job_name move, day by day
-- grain: one row per (UTC day of timestamp_utc, job_name) with at least one outcome
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: every outcome counts for the failure rate; p95_duration_ms is nearest-rank
--   over the day's measured durations only (null when the day has none)
SELECT
    utc_day,
    job_name,
    count(*) AS outcomes,
    count_if(status = 'failure') AS failures,
    round(CAST(count_if(status = 'failure') AS DOUBLE) / count(*), 4) AS failure_rate,
    count_if(duration_measured) AS measured_durations,
    min(CASE WHEN duration_measured AND duration_rank >= ceil(0.95 * measured_in_day)
        THEN duration_ms END) AS p95_duration_ms
FROM (
    SELECT
        utc_day,
        job_name,
        status,
        duration_ms,
        duration_measured,
        row_number() OVER (
            PARTITION BY utc_day, job_name, duration_measured ORDER BY duration_ms
        ) AS duration_rank,
        count(*) OVER (PARTITION BY utc_day, job_name, duration_measured) AS measured_in_day
    FROM (
        SELECT
            CAST(timestamp_utc AS DATE) AS utc_day,
            job_name,
            status,
            duration_ms,
            NOT contains(unmeasured, 'duration_ms') AS duration_measured
        FROM outcomes
    ) AS flagged
) AS ranked
GROUP BY utc_day, job_name
ORDER BY utc_day, job_name
