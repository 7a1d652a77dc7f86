SELECT DISTINCT ON (customer_id) customer_id, id, placed_at, amount
FROM orders
ORDER BY customer_id, placed_at DESC
