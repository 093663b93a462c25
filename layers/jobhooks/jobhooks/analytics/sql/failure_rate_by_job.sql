-- question: which job_names fail, and how often, over the window
-- grain: one row per job_name
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: status is always measured, so every outcome counts; outcomes without a
--   metadata.source are grouped under job_name 'unknown'
SELECT
    job_name,
    count(*) AS outcomes,
    count_if(status = 'failure') AS failures,
    round(CAST(count_if(status = 'failure') AS DOUBLE) / count(*), 4) AS failure_rate
FROM outcomes
GROUP BY job_name
ORDER BY failure_rate DESC, failures DESC, job_name
