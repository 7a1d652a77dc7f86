-- 600 customers and 4,000 orders (one in 11 refunded), generated from a numbers table built out
-- of ten digits (MySQL and MariaDB have no generate_series). Orders are not indexed by customer.
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e;

CREATE TABLE customers (
    id INT NOT NULL PRIMARY KEY,
    name VARCHAR(40) NOT NULL
);

CREATE TABLE orders (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    status VARCHAR(10) NOT NULL,
    amount DECIMAL(10, 2) NOT NULL
);

INSERT INTO customers (id, name)
SELECT n, CONCAT('customer ', n) FROM numbers WHERE n BETWEEN 1 AND 600;

INSERT INTO orders (id, customer_id, status, amount)
SELECT n,
       1 + (n * 7919) % 600,
       CASE WHEN n % 11 = 0 THEN 'refunded' WHEN n % 5 = 0 THEN 'pending' ELSE 'paid' END,
       ((n * 37) % 50000) / 100
FROM numbers
WHERE n BETWEEN 1 AND 4000;

ANALYZE TABLE customers, orders;
