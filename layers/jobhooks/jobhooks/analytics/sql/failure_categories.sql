-- question: how do jobs fail: the controlled error categories per job_name over the window
-- grain: one row per (error_category, job_name) among failures
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: only failures carry a category; a failure whose text matches no rule is in
--   category 'unknown'. The table never holds the error text
SELECT
    error_category,
    job_name,
    count(*) AS failures
FROM outcomes
WHERE status = 'failure'
GROUP BY error_category, job_name
ORDER BY failures DESC, error_category, job_name
