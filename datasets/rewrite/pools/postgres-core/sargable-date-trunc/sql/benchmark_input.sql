-- Events of March 2026 by kind.
SELECT kind, count(*) AS events, count(DISTINCT user_id) AS users
FROM events
WHERE date_trunc('month', happened_at) = timestamp '2026-03-01'
GROUP BY kind
ORDER BY kind
