-- Orders to review: every refunded order, and every other order over 495.
SELECT id, customer_id, status, amount
FROM orders
WHERE status = 'refunded'
UNION
SELECT id, customer_id, status, amount
FROM orders
WHERE amount > 495 AND status <> 'refunded'
