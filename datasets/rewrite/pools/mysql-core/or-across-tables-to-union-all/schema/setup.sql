-- 5,000 customers (every ninth without an e-mail address) and 40,000 orders with a tracking code,
-- each searchable column indexed. MySQL and MariaDB have no generate_series, so the rows come
-- from a numbers table built out of ten digits.
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e
CROSS JOIN (SELECT d FROM digits WHERE d < 5) AS f;

CREATE TABLE customers (
    id INT NOT NULL PRIMARY KEY,
    name VARCHAR(40) NOT NULL,
    email VARCHAR(60) NULL,          -- not every customer gave one
    UNIQUE KEY customers_email (email)
);

CREATE TABLE orders (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    tracking_code VARCHAR(20) NOT NULL,
    amount DECIMAL(10, 2) NOT NULL,
    KEY orders_customer (customer_id),
    KEY orders_tracking (tracking_code)
);

INSERT INTO customers (id, name, email)
SELECT n,
       CONCAT('customer ', n),
       CASE WHEN n % 9 = 0 THEN NULL ELSE CONCAT('customer', n, '@example.com') END
FROM numbers
WHERE n BETWEEN 1 AND 5000;

INSERT INTO orders (id, customer_id, tracking_code, amount)
SELECT n,
       1 + (n * 7919) % 5000,
       CONCAT('TRK-', LPAD(n, 7, '0')),
       ((n * 37) % 50000) / 100
FROM numbers
WHERE n BETWEEN 1 AND 40000;

ANALYZE TABLE customers, orders;
