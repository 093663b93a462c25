-- question: which job_names run slowly: p50, p95 and maximum duration_ms over the window
-- grain: one row per job_name, with how many of its outcomes have a measured duration
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: rows listing duration_ms in unmeasured (failures: Fetcher reports no duration)
--   are left out of the percentiles and the maximum (null when a job_name has no measured
--   duration); percentiles are nearest-rank: the smallest measured value with at least
--   p percent of the job's measured values at or below it
-- measured_column: measured_outcomes
-- when_unmeasured: Nothing in this window is measured: no outcome has a measured duration_ms
--   (Fetcher reports a duration for completed jobs only), so no job_name can be ranked.
SELECT
    job_name,
    count(*) AS outcomes,
    count_if(duration_measured) AS measured_outcomes,
    min(CASE WHEN duration_measured AND duration_rank >= ceil(0.50 * measured_in_job)
        THEN duration_ms END) AS p50_duration_ms,
    min(CASE WHEN duration_measured AND duration_rank >= ceil(0.95 * measured_in_job)
        THEN duration_ms END) AS p95_duration_ms,
    max(CASE WHEN duration_measured THEN duration_ms END) AS max_duration_ms
FROM (
    SELECT
        job_name,
        duration_ms,
        duration_measured,
        row_number() OVER (PARTITION BY job_name, duration_measured ORDER BY duration_ms)
            AS duration_rank,
        count(*) OVER (PARTITION BY job_name, duration_measured) AS measured_in_job
    FROM (
        SELECT
            job_name,
            duration_ms,
            NOT contains(unmeasured, 'duration_ms') AS duration_measured
        FROM outcomes
    ) AS flagged
) AS ranked
GROUP BY job_name
ORDER BY p95_duration_ms DESC NULLS LAST, max_duration_ms DESC NULLS LAST, job_name
