SELECT o.id AS order_id, c.id AS customer_id, c.email, o.tracking_code, o.amount
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
WHERE c.email = 'customer42@example.com'
UNION ALL
SELECT o.id AS order_id, c.id AS customer_id, c.email, o.tracking_code, o.amount
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
WHERE o.tracking_code IN ('TRK-0004839', 'TRK-0000041', 'TRK-0017000')
  AND NOT (c.email <=> 'customer42@example.com')
