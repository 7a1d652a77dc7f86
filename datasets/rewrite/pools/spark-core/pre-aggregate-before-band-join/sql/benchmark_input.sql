-- Sales and revenue per price band.
SELECT b.band,
       count(*) AS sale_count,
       sum(s.amount) AS revenue
FROM sales s
JOIN price_bands b
  ON s.amount >= b.lo AND s.amount < b.hi
GROUP BY b.band
