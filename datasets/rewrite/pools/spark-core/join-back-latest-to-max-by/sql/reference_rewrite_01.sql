SELECT customer_id,
       max_by(amount, struct(placed_at, amount)) AS latest_amount
FROM orders
WHERE customer_id IS NOT NULL AND placed_at IS NOT NULL
GROUP BY customer_id
