-- Products never sold by their own home shop.
SELECT p.id, p.home_shop_id, p.name
FROM products AS p
WHERE p.id NOT IN (
    SELECT oi.product_id
    FROM order_items AS oi
    WHERE oi.shop_id = p.home_shop_id
)
ORDER BY p.id
