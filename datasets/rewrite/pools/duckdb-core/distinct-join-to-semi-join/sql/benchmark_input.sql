-- Customers with at least one order over 400.
SELECT DISTINCT c.id, c.name, c.region
FROM customers AS c
JOIN orders AS o ON o.customer_id = c.id
WHERE o.amount > 400
