SELECT s.store_id,
       count(*) AS sale_count,
       sum(s.qty) AS units
FROM sales s
LEFT ANTI JOIN recalls r
  ON r.store_id = s.store_id AND r.product_id = s.product_id
WHERE s.store_id IS NOT NULL AND s.product_id IS NOT NULL
GROUP BY s.store_id
