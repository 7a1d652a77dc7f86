SELECT account_id,
       day,
       amount,
       SUM(amount) OVER (
           PARTITION BY account_id ORDER BY day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
       ) AS balance
FROM ledger
ORDER BY account_id, day
