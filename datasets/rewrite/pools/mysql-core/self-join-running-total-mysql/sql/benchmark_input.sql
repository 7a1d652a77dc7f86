-- Each account's balance at the end of every day.
SELECT a.account_id, a.day, a.amount, SUM(b.amount) AS balance
FROM ledger AS a
JOIN ledger AS b ON b.account_id = a.account_id AND b.day <= a.day
GROUP BY a.account_id, a.day, a.amount
ORDER BY a.account_id, a.day
