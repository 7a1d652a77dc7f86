-- The current price of every product: the price valid from its latest date.
SELECT p.product_id, p.price AS current_price
FROM prices AS p
JOIN (
    SELECT product_id, max(valid_from) AS latest
    FROM prices
    GROUP BY product_id
) AS l ON l.product_id = p.product_id AND l.latest = p.valid_from
