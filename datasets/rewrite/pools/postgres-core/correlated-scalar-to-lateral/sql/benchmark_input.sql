-- Northern customers with their number of orders and the time of their latest order.
SELECT c.id,
       c.name,
       (SELECT count(*) FROM orders AS o WHERE o.customer_id = c.id) AS order_count,
       (SELECT max(o.placed_at) FROM orders AS o WHERE o.customer_id = c.id) AS last_order_at
FROM customers AS c
WHERE c.region = 'north'
ORDER BY c.id
