SELECT id, username, created_on
FROM accounts
WHERE username IN ('User4711', 'user12', 'USER5', 'uSeR99')
  AND BINARY username IN ('User4711', 'user12', 'USER5', 'uSeR99')
