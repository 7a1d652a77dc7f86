-- Customers whose orders add up to more than 2,600.
SELECT c.id, c.name
FROM customers AS c
WHERE c.id IN (
    SELECT o.customer_id
    FROM orders AS o
    GROUP BY o.customer_id
    HAVING SUM(o.amount) > 2600
)
ORDER BY c.id
