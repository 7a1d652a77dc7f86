-- 99,999 orders with a status (1 in 97 refunded) and an amount, generated from a numbers table
-- built out of ten digits (MySQL and MariaDB have no generate_series).
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e
CROSS JOIN digits AS f;

CREATE TABLE orders (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    status VARCHAR(10) NOT NULL,
    amount DECIMAL(10, 2) NOT NULL
);

INSERT INTO orders (id, customer_id, status, amount)
SELECT n,
       1 + (n * 7919) % 5000,
       CASE WHEN n % 97 = 0 THEN 'refunded' WHEN n % 5 = 0 THEN 'pending' ELSE 'paid' END,
       ((n * 7919) % 50000) / 100
FROM numbers
WHERE n BETWEEN 1 AND 99999;

ANALYZE TABLE orders;
