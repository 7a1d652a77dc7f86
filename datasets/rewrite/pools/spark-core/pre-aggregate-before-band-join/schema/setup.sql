-- 500,000 sales at about 2,000 distinct prices, and 200 price bands ten units wide, generated
-- by Spark's range(). Every seventh sale is priced exactly on a band boundary and some have no
-- amount; one band is listed twice, one overlaps others and one has no upper bound.
CREATE TABLE sales (
    sale_id BIGINT,
    amount DECIMAL(10, 2)
) USING parquet;

CREATE TABLE price_bands (
    band STRING,
    lo DECIMAL(10, 2),
    hi DECIMAL(10, 2)
) USING parquet;

INSERT INTO sales
SELECT id,
       CASE WHEN id % 503 = 0 THEN NULL
            WHEN id % 7 = 0 THEN CAST((id * 7919) % 200 * 10 AS DECIMAL(10, 2))
            ELSE CAST((id * 7919) % 2000 AS DECIMAL(10, 2)) + 0.99 END
FROM range(500000);

INSERT INTO price_bands
SELECT concat('band-', CAST(id AS STRING)),
       CAST(id * 10 AS DECIMAL(10, 2)),
       CAST(id * 10 + 10 AS DECIMAL(10, 2))
FROM range(200);

INSERT INTO price_bands VALUES
    ('band-5', 50.00, 60.00),
    ('premium', 1500.00, 2000.00),
    ('open-ended', 1000.00, NULL);
