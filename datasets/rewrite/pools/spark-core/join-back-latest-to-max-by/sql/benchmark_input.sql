-- The amount of each customer's latest order (the largest, when several share the latest time).
SELECT o.customer_id,
       max(o.amount) AS latest_amount
FROM orders o
JOIN (
    SELECT customer_id, max(placed_at) AS latest_at
    FROM orders
    GROUP BY customer_id
) latest
  ON o.customer_id = latest.customer_id AND o.placed_at = latest.latest_at
GROUP BY o.customer_id
