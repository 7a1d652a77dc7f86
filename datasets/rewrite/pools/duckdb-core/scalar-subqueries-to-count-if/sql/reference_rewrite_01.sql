SELECT
    count_if(status = 'paid') AS paid_orders,
    count_if(status = 'refunded') AS refunded_orders,
    sum(amount) FILTER (WHERE status = 'paid') AS paid_revenue,
    max(amount) FILTER (WHERE status = 'refunded') AS largest_refund,
    count_if(placed_at >= TIMESTAMP '2026-12-01') AS december_orders
FROM orders
