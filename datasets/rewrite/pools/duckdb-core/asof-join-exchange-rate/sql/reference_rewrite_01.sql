SELECT o.id,
       o.currency,
       o.amount,
       r.rate,
       o.amount * r.rate AS converted
FROM orders AS o
ASOF LEFT JOIN rates AS r ON r.currency = o.currency AND r.valid_from <= o.placed_at
