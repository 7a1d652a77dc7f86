SELECT c.id, c.name
FROM customers AS c
JOIN (
    SELECT customer_id
    FROM orders
    GROUP BY customer_id
    HAVING SUM(amount) > 2600
) AS big ON big.customer_id = c.id
ORDER BY c.id
