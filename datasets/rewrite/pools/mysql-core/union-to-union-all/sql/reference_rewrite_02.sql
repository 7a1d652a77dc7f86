SELECT id, customer_id, status, amount
FROM orders
WHERE status = 'refunded' OR amount > 495
