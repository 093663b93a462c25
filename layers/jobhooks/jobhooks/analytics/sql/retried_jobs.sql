-- question: which job_names are retried: outcomes that took more than one attempt
-- grain: one row per job_name, with how many of its outcomes have a measured attempt_count
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: rows listing attempt_count in unmeasured are left out of every count but
--   outcomes; Fetcher runs each job once, so its attempt_count is 1 by the producer's design
-- measured_column: measured_outcomes
-- when_unmeasured: Nothing in this window is measured: no outcome has a measured
--   attempt_count, so retries cannot be counted.
SELECT
    job_name,
    count(*) AS outcomes,
    count_if(attempts_measured) AS measured_outcomes,
    count_if(attempts_measured AND attempt_count > 1) AS retried_outcomes,
    round(
        CAST(count_if(attempts_measured AND attempt_count > 1) AS DOUBLE)
        / greatest(count_if(attempts_measured), 1),
        4
    ) AS retry_rate,
    max(CASE WHEN attempts_measured THEN attempt_count END) AS max_attempt_count
FROM (
    SELECT
        job_name,
        attempt_count,
        NOT contains(unmeasured, 'attempt_count') AS attempts_measured
    FROM outcomes
) AS flagged
GROUP BY job_name
ORDER BY retried_outcomes DESC, retry_rate DESC, job_name
