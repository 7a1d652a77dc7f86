WITH customer_totals AS (
    SELECT customer_id, count(*) AS orders, sum(amount) AS total, max(placed_at) AS last_order_at
    FROM orders
    GROUP BY customer_id
)
SELECT customer_id, orders, total, last_order_at
FROM customer_totals
WHERE customer_id BETWEEN 100 AND 119
ORDER BY customer_id
