SELECT store_id,
       quarter,
       sum(revenue) AS total_revenue,
       count(revenue) AS years_reported
FROM quarterly
LATERAL VIEW stack(4, 'q1', q1, 'q2', q2, 'q3', q3, 'q4', q4) by_quarter AS quarter, revenue
GROUP BY store_id, quarter
