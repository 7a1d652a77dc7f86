-- 60,000 events spread over 2025 and 2026 with an index on their time, generated from a
-- numbers table built out of ten digits (MySQL and MariaDB have no generate_series). Events
-- fall exactly on the month boundaries too.
CREATE TABLE digits (d INT NOT NULL PRIMARY KEY);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);

CREATE TABLE numbers (n INT NOT NULL PRIMARY KEY);
INSERT INTO numbers
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d
FROM digits AS a
CROSS JOIN digits AS b
CROSS JOIN digits AS c
CROSS JOIN digits AS e
CROSS JOIN (SELECT d FROM digits WHERE d < 6) AS f;

CREATE TABLE events (
    id INT NOT NULL PRIMARY KEY,
    user_id INT NOT NULL,
    kind VARCHAR(10) NOT NULL,
    happened_at DATETIME(6) NOT NULL,
    KEY events_happened_at (happened_at)
);

INSERT INTO events (id, user_id, kind, happened_at)
SELECT n,
       1 + (n * 7919) % 5000,
       ELT(1 + (n * 31) % 5, 'view', 'click', 'cart', 'buy', 'share'),
       '2025-01-01 00:00:00' + INTERVAL (n * 104729) % 1051200 MINUTE
FROM numbers
WHERE n BETWEEN 1 AND 60000;

-- the first and last instants of March 2026, and the first instant of April
INSERT INTO events (id, user_id, kind, happened_at) VALUES
    (60001, 1, 'view', '2026-03-01 00:00:00'),
    (60002, 2, 'buy', '2026-03-31 23:59:59.999999'),
    (60003, 3, 'view', '2026-04-01 00:00:00');

ANALYZE TABLE events;
