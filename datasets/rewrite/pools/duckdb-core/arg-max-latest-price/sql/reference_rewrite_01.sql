SELECT product_id, arg_max(price, valid_from) AS current_price
FROM prices
GROUP BY product_id
