SELECT id, customer_id, status, amount
FROM orders
WHERE status = 'refunded'
UNION ALL
SELECT id, customer_id, status, amount
FROM orders
WHERE amount > 495 AND status <> 'refunded'
