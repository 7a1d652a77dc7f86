-- A one-row payments dashboard.
SELECT
    (SELECT count(*) FROM events WHERE kind = 'sale') AS sale_count,
    (SELECT sum(amount) FROM events WHERE kind = 'sale') AS sale_revenue,
    (SELECT count(*) FROM events WHERE kind = 'refund') AS refund_count,
    (SELECT max(amount) FROM events WHERE kind = 'refund') AS largest_refund,
    (SELECT count(*) FROM events WHERE kind = 'pending') AS pending_count,
    (SELECT count(*) FROM events WHERE amount >= 400) AS large_count,
    (SELECT count(*) FROM events WHERE occurred_at >= TIMESTAMP '2026-12-01 00:00:00') AS december_events
