-- Daily net movements of 30 accounts over 150 days (4,500 rows), generated from a numbers table
-- built out of ten digits (MySQL and MariaDB have no generate_series); a few days have no
-- booked amount yet (NULL).
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c;

CREATE TABLE ledger (
    account_id INT NOT NULL,
    day DATE NOT NULL,
    amount DECIMAL(12, 2) NULL,
    PRIMARY KEY (account_id, day)
);

INSERT INTO ledger (account_id, day, amount)
SELECT acct.n,
       DATE '2026-01-01' + INTERVAL d.n DAY,
       CASE WHEN (acct.n * 31 + d.n) % 53 = 0 THEN NULL
            ELSE ((acct.n * 7919 + d.n * 104729) % 200001 - 100000) / 100 END
FROM numbers AS acct
CROSS JOIN numbers AS d
WHERE acct.n BETWEEN 1 AND 30 AND d.n < 150;

ANALYZE TABLE ledger;
