SELECT c.id,
       c.name,
       s.order_count,
       s.last_order_at
FROM customers AS c
CROSS JOIN LATERAL (
    SELECT count(*) AS order_count, max(o.placed_at) AS last_order_at
    FROM orders AS o
    WHERE o.customer_id = c.id
) AS s
WHERE c.region = 'north'
ORDER BY c.id
