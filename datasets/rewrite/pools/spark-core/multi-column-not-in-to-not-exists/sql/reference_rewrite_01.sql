SELECT s.store_id,
       count(*) AS sale_count,
       sum(s.qty) AS units
FROM sales s
WHERE s.store_id IS NOT NULL
  AND s.product_id IS NOT NULL
  AND NOT EXISTS (
      SELECT 1
      FROM recalls r
      WHERE r.store_id = s.store_id AND r.product_id = s.product_id)
GROUP BY s.store_id
