SELECT p.id, p.home_shop_id, p.name
FROM products AS p
WHERE NOT EXISTS (
    SELECT 1
    FROM order_items AS oi
    WHERE oi.shop_id = p.home_shop_id AND oi.product_id = p.id
)
ORDER BY p.id
