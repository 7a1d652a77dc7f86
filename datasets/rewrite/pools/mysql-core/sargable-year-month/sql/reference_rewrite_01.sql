SELECT kind, COUNT(*) AS events, COUNT(DISTINCT user_id) AS users
FROM events
WHERE happened_at >= '2026-03-01 00:00:00' AND happened_at < '2026-04-01 00:00:00'
GROUP BY kind
ORDER BY kind
