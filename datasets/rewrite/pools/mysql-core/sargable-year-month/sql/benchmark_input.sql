-- Events of March 2026 by kind.
SELECT kind, COUNT(*) AS events, COUNT(DISTINCT user_id) AS users
FROM events
WHERE YEAR(happened_at) = 2026 AND MONTH(happened_at) = 3
GROUP BY kind
ORDER BY kind
