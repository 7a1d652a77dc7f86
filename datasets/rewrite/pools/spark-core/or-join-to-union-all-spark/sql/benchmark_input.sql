-- Calls per account, matched on either of the account's phone numbers.
SELECT a.account_id,
       count(*) AS call_count
FROM accounts a
JOIN calls c
  ON c.phone = a.primary_phone OR c.phone = a.backup_phone
GROUP BY a.account_id
