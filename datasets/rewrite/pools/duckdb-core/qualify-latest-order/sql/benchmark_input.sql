-- Latest order of every customer (ties on time broken by the higher order id).
SELECT customer_id, id, placed_at, amount
FROM (
    SELECT customer_id, id, placed_at, amount,
           row_number() OVER (PARTITION BY customer_id ORDER BY placed_at DESC, id DESC) AS rn
    FROM orders
) AS ranked
WHERE rn = 1
ORDER BY customer_id
