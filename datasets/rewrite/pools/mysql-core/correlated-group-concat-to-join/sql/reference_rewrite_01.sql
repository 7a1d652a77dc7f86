SELECT c.id,
       c.name,
       t.tags
FROM customers AS c
LEFT JOIN (
    SELECT customer_id, GROUP_CONCAT(tag ORDER BY tag SEPARATOR ',') AS tags
    FROM customer_tags
    GROUP BY customer_id
) AS t ON t.customer_id = c.id
WHERE c.region = 'north'
