-- Sales per store of products not recalled at that store.
SELECT store_id,
       count(*) AS sale_count,
       sum(qty) AS units
FROM sales
WHERE store_id IS NOT NULL
  AND product_id IS NOT NULL
  AND (store_id, product_id) NOT IN (
      SELECT store_id, product_id
      FROM recalls
      WHERE store_id IS NOT NULL AND product_id IS NOT NULL)
GROUP BY store_id
