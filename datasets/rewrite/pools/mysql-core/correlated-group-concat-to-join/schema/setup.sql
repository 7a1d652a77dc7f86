-- 1,200 customers in 4 regions and 4,000 tag assignments (some customers have none, some tags
-- are repeated), generated from a numbers table built out of ten digits (MySQL and MariaDB
-- have no generate_series). Tags are not indexed by customer.
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
    name VARCHAR(40) NOT NULL,
    region VARCHAR(10) NOT NULL
);

CREATE TABLE customer_tags (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    tag VARCHAR(20) NOT NULL
);

INSERT INTO customers (id, name, region)
SELECT n, CONCAT('customer ', n), ELT(1 + n % 4, 'north', 'south', 'east', 'west')
FROM numbers
WHERE n BETWEEN 1 AND 1200;

-- customers 1001..1200 get no tags
INSERT INTO customer_tags (id, customer_id, tag)
SELECT n,
       1 + (n * 7919) % 1000,
       ELT(1 + (n * 104729) % 7, 'vip', 'churn-risk', 'newsletter', 'b2b', 'late-payer',
           'referral', 'vip')
FROM numbers
WHERE n BETWEEN 1 AND 4000;

ANALYZE TABLE customers, customer_tags;
