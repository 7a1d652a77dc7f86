SELECT c.region,
       c.segment,
       date_trunc('month', o.placed_at) AS month,
       o.status,
       count(*) AS orders,
       sum(o.amount) AS revenue
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
GROUP BY ALL
ORDER BY region, segment, month, status
