SELECT
    count(*) FILTER (WHERE status = 'paid') AS paid_orders,
    count(*) FILTER (WHERE status = 'refunded') AS refunded_orders,
    sum(amount) FILTER (WHERE status = 'paid') AS paid_revenue,
    max(amount) FILTER (WHERE status = 'refunded') AS largest_refund,
    count(*) FILTER (WHERE placed_at >= timestamp '2026-12-01') AS december_orders
FROM orders
