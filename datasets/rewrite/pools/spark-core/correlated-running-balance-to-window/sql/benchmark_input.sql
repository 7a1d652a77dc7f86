-- Each ledger entry with its account's balance up to and including its sequence number.
SELECT a.entry_id,
       a.acct,
       a.seq,
       a.amount,
       (SELECT sum(b.amount)
        FROM ledger b
        WHERE b.acct = a.acct AND b.seq <= a.seq) AS balance
FROM ledger a
