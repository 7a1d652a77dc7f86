SELECT b.band,
       sum(p.sale_count) AS sale_count,
       sum(p.revenue) AS revenue
FROM (
    SELECT amount, count(*) AS sale_count, sum(amount) AS revenue
    FROM sales
    GROUP BY amount
) p
JOIN price_bands b
  ON p.amount >= b.lo AND p.amount < b.hi
GROUP BY b.band
