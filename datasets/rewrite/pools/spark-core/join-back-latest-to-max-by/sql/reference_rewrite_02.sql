SELECT customer_id,
       max(amount) AS latest_amount
FROM (
    SELECT customer_id,
           placed_at,
           amount,
           max(placed_at) OVER (PARTITION BY customer_id) AS latest_at
    FROM orders
    WHERE customer_id IS NOT NULL
) ordered
WHERE placed_at = latest_at
GROUP BY customer_id
