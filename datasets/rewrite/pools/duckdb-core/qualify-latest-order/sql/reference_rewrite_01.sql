SELECT customer_id, id, placed_at, amount
FROM orders
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY placed_at DESC, id DESC) = 1
ORDER BY customer_id
