SELECT kind, count(*) AS events, count(DISTINCT user_id) AS users
FROM events
WHERE happened_at >= timestamp '2026-03-01' AND happened_at < timestamp '2026-04-01'
GROUP BY kind
ORDER BY kind
