SELECT account_id,
       count(*) AS call_count
FROM (
    SELECT a.account_id
    FROM accounts a
    JOIN calls c ON c.phone = a.primary_phone
    UNION ALL
    SELECT a.account_id
    FROM accounts a
    JOIN calls c ON c.phone = a.backup_phone
    WHERE NOT (c.phone <=> a.primary_phone)
) matched
GROUP BY account_id
