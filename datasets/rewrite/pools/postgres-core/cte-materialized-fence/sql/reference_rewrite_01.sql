SELECT customer_id, count(*) AS orders, sum(amount) AS total, max(placed_at) AS last_order_at
FROM orders
WHERE customer_id BETWEEN 100 AND 119
GROUP BY customer_id
ORDER BY customer_id
