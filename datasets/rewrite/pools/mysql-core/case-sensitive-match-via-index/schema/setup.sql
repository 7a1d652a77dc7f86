-- 50,000 accounts whose user names differ in letter case, with an index on the name under the
-- case-insensitive utf8mb4_general_ci collation; generated from a numbers table built out of
-- ten digits (MySQL and MariaDB have no generate_series).
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

CREATE TABLE accounts (
    id INT NOT NULL PRIMARY KEY,
    username VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL,
    created_on DATE NOT NULL,
    KEY accounts_username (username)
) DEFAULT CHARSET = utf8mb4;

INSERT INTO accounts (id, username, created_on)
SELECT n,
       CASE n % 3 WHEN 0 THEN CONCAT('user', n)
                  WHEN 1 THEN CONCAT('User', n)
                  ELSE CONCAT('USER', n) END,
       '2020-01-01' + INTERVAL (n * 7919) % 2000 DAY
FROM numbers
WHERE n BETWEEN 1 AND 50000;

-- names equal to the searched ones under the case-insensitive collation only: other letter
-- case, and a trailing space (which PAD SPACE collations ignore)
INSERT INTO accounts (id, username, created_on) VALUES
    (50001, 'user4711', '2026-01-01'),
    (50002, 'USER4711', '2026-01-02'),
    (50003, 'User4711 ', '2026-01-03'),
    (50004, 'User12', '2026-01-04'),
    (50005, 'user5', '2026-01-05'),
    (50006, 'USER5 ', '2026-01-06');

ANALYZE TABLE accounts;
