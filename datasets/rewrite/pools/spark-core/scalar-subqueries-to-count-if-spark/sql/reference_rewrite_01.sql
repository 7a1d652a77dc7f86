SELECT
    count_if(kind = 'sale') AS sale_count,
    sum(amount) FILTER (WHERE kind = 'sale') AS sale_revenue,
    count_if(kind = 'refund') AS refund_count,
    max(amount) FILTER (WHERE kind = 'refund') AS largest_refund,
    count_if(kind = 'pending') AS pending_count,
    count_if(amount >= 400) AS large_count,
    count_if(occurred_at >= TIMESTAMP '2026-12-01 00:00:00') AS december_events
FROM events
