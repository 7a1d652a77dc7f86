-- Monthly revenue by region, segment and status.
SELECT c.region,
       c.segment,
       date_trunc('month', o.placed_at) AS month,
       o.status,
       count(*) AS orders,
       sum(o.amount) AS revenue
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
GROUP BY c.region, c.segment, date_trunc('month', o.placed_at), o.status
HAVING count(*) > 0
ORDER BY region, segment, month, status
