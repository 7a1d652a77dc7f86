SELECT o.customer_id, o.id, o.placed_at, o.amount
FROM orders AS o
JOIN (
    SELECT customer_id, MAX(placed_at) AS latest
    FROM orders
    GROUP BY customer_id
) AS l ON l.customer_id = o.customer_id AND l.latest = o.placed_at
ORDER BY o.customer_id
