SELECT customer_id, id, placed_at, amount
FROM (
    SELECT customer_id, id, placed_at, amount,
           ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY placed_at DESC) AS rn
    FROM orders
) AS ranked
WHERE rn = 1
ORDER BY customer_id
