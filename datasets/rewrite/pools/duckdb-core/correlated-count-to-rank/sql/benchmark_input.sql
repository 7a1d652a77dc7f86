-- The three most expensive products of every category, all of them when several tie.
SELECT p.category, p.id, p.price
FROM products AS p
WHERE (
    SELECT count(*)
    FROM products AS q
    WHERE q.category = p.category AND q.price > p.price
) < 3
