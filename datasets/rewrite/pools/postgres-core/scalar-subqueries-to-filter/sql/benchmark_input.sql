-- A one-row status dashboard.
SELECT
    (SELECT count(*) FROM orders WHERE status = 'paid') AS paid_orders,
    (SELECT count(*) FROM orders WHERE status = 'refunded') AS refunded_orders,
    (SELECT sum(amount) FROM orders WHERE status = 'paid') AS paid_revenue,
    (SELECT max(amount) FROM orders WHERE status = 'refunded') AS largest_refund,
    (SELECT count(*) FROM orders WHERE placed_at >= timestamp '2026-12-01') AS december_orders
