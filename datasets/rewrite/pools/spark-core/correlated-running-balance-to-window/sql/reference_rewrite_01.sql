SELECT entry_id,
       acct,
       seq,
       amount,
       CASE WHEN acct IS NOT NULL AND seq IS NOT NULL THEN
           sum(CASE WHEN seq IS NOT NULL THEN amount END) OVER (
               PARTITION BY acct ORDER BY seq
               RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
       END AS balance
FROM ledger
