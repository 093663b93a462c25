-- question: how many outcomes per day, and how many of them failed
-- grain: one row per UTC day of timestamp_utc that has at least one outcome
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: status is always measured, so every outcome counts; a day with no outcome has
--   no row
SELECT
    CAST(timestamp_utc AS DATE) AS utc_day,
    count(*) AS outcomes,
    count_if(status = 'success') AS successes,
    count_if(status = 'failure') AS failures,
    round(CAST(count_if(status = 'failure') AS DOUBLE) / count(*), 4) AS failure_rate
FROM outcomes
GROUP BY CAST(timestamp_utc AS DATE)
ORDER BY utc_day
