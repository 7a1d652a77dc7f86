-- Northern customers with their tags as one comma-separated list.
SELECT c.id,
       c.name,
       (SELECT GROUP_CONCAT(t.tag ORDER BY t.tag SEPARATOR ',')
        FROM customer_tags AS t
        WHERE t.customer_id = c.id) AS tags
FROM customers AS c
WHERE c.region = 'north'
