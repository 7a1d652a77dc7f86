-- Every order with the exchange rate in force when it was placed, and its converted amount.
SELECT o.id,
       o.currency,
       o.amount,
       (SELECT r.rate
        FROM rates AS r
        WHERE r.currency = o.currency AND r.valid_from <= o.placed_at
        ORDER BY r.valid_from DESC
        LIMIT 1) AS rate,
       o.amount * (SELECT r.rate
                   FROM rates AS r
                   WHERE r.currency = o.currency AND r.valid_from <= o.placed_at
                   ORDER BY r.valid_from DESC
                   LIMIT 1) AS converted
FROM orders AS o
