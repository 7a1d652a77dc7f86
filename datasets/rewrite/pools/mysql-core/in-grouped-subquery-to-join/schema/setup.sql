-- 3,000 customers and 30,000 orders, generated from a numbers table built out of ten digits
-- (MySQL and MariaDB have no generate_series).
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e
CROSS JOIN (SELECT d FROM digits WHERE d < 3) AS f;

CREATE TABLE customers (
    id INT NOT NULL PRIMARY KEY,
    name VARCHAR(40) NOT NULL
);

CREATE TABLE orders (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    amount DECIMAL(10, 2) NOT NULL,
    KEY orders_customer (customer_id)
);

INSERT INTO customers (id, name)
SELECT n, CONCAT('customer ', n) FROM numbers WHERE n BETWEEN 1 AND 3000;

INSERT INTO orders (id, customer_id, amount)
SELECT n, 1 + (n * 7919) % 3000, ((n * 37) % 50000) / 100
FROM numbers
WHERE n BETWEEN 1 AND 30000;

ANALYZE TABLE customers, orders;
