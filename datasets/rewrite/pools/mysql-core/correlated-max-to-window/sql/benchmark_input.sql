-- The latest order of every customer.
SELECT o.customer_id, o.id, o.placed_at, o.amount
FROM orders AS o
WHERE o.placed_at = (
    SELECT MAX(o2.placed_at)
    FROM orders AS o2
    WHERE o2.customer_id = o.customer_id
)
ORDER BY o.customer_id
