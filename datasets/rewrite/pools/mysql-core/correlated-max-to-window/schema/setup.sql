-- 20,000 orders of 1,000 customers, generated from a numbers table built out of ten digits
-- (MySQL and MariaDB have no generate_series). A customer never places two orders at the same
-- instant: the UNIQUE key says so.
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e
CROSS JOIN (SELECT d FROM digits WHERE d < 2) AS f;

CREATE TABLE orders (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    placed_at DATETIME NOT NULL,
    amount DECIMAL(10, 2) NOT NULL,
    UNIQUE KEY orders_customer_time (customer_id, placed_at)
);

INSERT INTO orders (id, customer_id, placed_at, amount)
SELECT n,
       1 + (n * 7919) % 1000,
       '2026-01-01 00:00:00' + INTERVAL (n * 104729) % 525600 MINUTE,
       ((n * 37) % 50000) / 100
FROM numbers
WHERE n BETWEEN 1 AND 20000;

ANALYZE TABLE orders;
