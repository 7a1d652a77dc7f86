SELECT c.id,
       c.name,
       coalesce(s.order_count, 0) AS order_count,
       s.last_order_at
FROM customers AS c
LEFT JOIN (
    SELECT customer_id, count(*) AS order_count, max(placed_at) AS last_order_at
    FROM orders
    GROUP BY customer_id
) AS s ON s.customer_id = c.id
WHERE c.region = 'north'
ORDER BY c.id
