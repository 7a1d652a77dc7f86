SELECT c.id, c.name, c.region
FROM customers AS c
SEMI JOIN orders AS o ON o.customer_id = c.id AND o.amount > 400
