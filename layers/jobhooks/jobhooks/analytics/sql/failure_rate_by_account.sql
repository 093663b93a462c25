-- question: which accounts see failures, and how often, over the window
-- grain: one row per account_id (a keyed pseudonym when pseudonymization is on)
-- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
-- unmeasured: status and account_id are always measured, so every outcome counts
SELECT
    account_id,
    count(*) AS outcomes,
    count_if(status = 'failure') AS failures,
    round(CAST(count_if(status = 'failure') AS DOUBLE) / count(*), 4) AS failure_rate
FROM outcomes
GROUP BY account_id
ORDER BY failure_rate DESC, failures DESC, account_id
