-- Customers who had at least one order refunded.
SELECT c.id, c.name
FROM customers AS c
WHERE (
    SELECT count(*)
    FROM orders AS o
    WHERE o.customer_id = c.id AND o.status = 'refunded'
) > 0
ORDER BY c.id
