-- Exact, case-sensitive look-up of four user names (the last exists only in another case).
SELECT id, username, created_on
FROM accounts
WHERE BINARY username IN ('User4711', 'user12', 'USER5', 'uSeR99')
