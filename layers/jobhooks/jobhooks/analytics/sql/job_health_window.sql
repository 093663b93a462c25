-- question: how each job_name fares over the window: outcomes, failures, failure rate and p95 duration (the job-health alerts' numbers)
-- grain: one row per job_name whose name was measured
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: rows listing job_name in unmeasured are left out (no alert rule can name them);
--   rows listing duration_ms in unmeasured (failures: Fetcher reports no duration) count as
--   outcomes but are left out of the p95, which is nearest-rank over the measured durations
--   only (null when there is none); measured_outcomes counts those
-- measured_column: measured_outcomes
-- when_unmeasured: Nothing in this window is measured for the p95: no outcome has a measured
--   duration_ms (failures carry none); the failure rates are still counted.
SELECT
    job_name,
    count(*) AS outcomes,
    count_if(status = 'failure') AS failures,
    round(CAST(count_if(status = 'failure') AS DOUBLE) / count(*), 4) AS failure_rate,
    count_if(duration_measured) AS measured_outcomes,
    min(CASE WHEN duration_measured AND duration_rank >= ceil(0.95 * measured_in_job)
        THEN duration_ms END) AS p95_duration_ms
FROM (
    SELECT
        job_name,
        status,
        duration_ms,
        duration_measured,
        row_number() OVER (PARTITION BY job_name, duration_measured ORDER BY duration_ms)
            AS duration_rank,
        count(*) OVER (PARTITION BY job_name, duration_measured) AS measured_in_job
    FROM (
        SELECT
            job_name,
            status,
            duration_ms,
            NOT contains(unmeasured, 'duration_ms') AS duration_measured
        FROM outcomes
        WHERE NOT contains(unmeasured, 'job_name')
    ) AS flagged
) AS ranked
GROUP BY job_name
ORDER BY job_name
