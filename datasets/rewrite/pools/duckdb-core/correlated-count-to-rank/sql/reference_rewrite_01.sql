SELECT category, id, price
FROM products
QUALIFY rank() OVER (PARTITION BY category ORDER BY price DESC) <= 3
